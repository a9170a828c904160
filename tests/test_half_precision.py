"""fp16 / bf16 safety at the module level: the model and the criterion in
half precision on CPU tensors, on sentences of up to 512 tokens. fairseq's
fp16 training through its Trainer also runs on the CPU (--cpu --fp16
--fp16-no-flatten-grads, --cpu --memory-efficient-fp16): test_fp16_cpu.py."""

import pytest
import torch

from conftest import make_task, tiny_model
from mass_plugin.criterions.masked_s2s_loss import MaskedS2SLoss


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mask_ratio", [0.5, 1.0])
def test_half_precision_training_step_is_finite_with_an_fp32_loss(mono_data, tmp_path,
                                                                 dtype, mask_ratio):
    data_dir, _, _ = mono_data
    task = make_task(data_dir, mask_ratio=mask_ratio, max_source_positions=600,
                     max_target_positions=600)
    task.load_dataset("train")
    dataset = task.dataset("train")
    model = tiny_model(task, max_source_positions=600, max_target_positions=600)
    model = model.to(dtype).train()
    # long sentences: the span covers up to all 512 tokens (mask_ratio 1.0)
    long = torch.randint(task.source_dictionary.nspecial, task.mask_idx, (512,))
    long[-1] = task.source_dictionary.eos()
    dataset.dataset = [long, dataset.dataset[0], dataset.dataset[1]]
    dataset.sizes = dataset.sizes[:3].copy()
    dataset.sizes[0] = 512
    batch = dataset.collater([dataset[i] for i in range(3)])
    criterion = MaskedS2SLoss(task, sentence_avg=False, label_smoothing=0.1)
    loss, sample_size, log = criterion(model, batch)
    assert loss.dtype == torch.float32
    assert torch.isfinite(loss)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert all(g.dtype == dtype for g in grads)
    assert sample_size == log["span_total"] == int(batch["target"].ne(1).sum())
