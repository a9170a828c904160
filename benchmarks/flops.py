"""The model FLOPs of a training step, counted from its matrix products, and
the GPU's dense fp16/bf16 peak to set them against (model FLOP utilisation).

torch's FlopCounterMode counts every matrix product a forward and backward
pass runs (linear layers, attention's batched products and fused attention
kernels, the output projection): what the model computes, padding included,
without the elementwise work around it. Its CPU fused-attention kernel is
not in torch's table; it is counted here with torch's own attention formula.
"""

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

# Dense (no sparsity) fp16/bf16 tensor-core peaks in TFLOP/s, from the vendors'
# datasheets, matched against torch.cuda.get_device_name in this order (the
# first name contained in it wins). --peak-tflops overrides.
PEAK_TFLOPS = (
    ("H200 NVL", 835.0), ("H200", 989.4), ("H100 PCIe", 756.0), ("H100 NVL", 835.0),
    ("H100", 989.4), ("A100", 312.0), ("L40S", 362.1), ("L4", 121.0), ("A10", 125.0),
    ("V100", 125.0),
)


def _cpu_attention(query, key, value, *args, out_shape=None, **kwargs):
    return sdpa_flop_count(query, key, value)


def _cpu_attention_backward(grad_out, query, key, value, *args, out_shape=None, **kwargs):
    return sdpa_backward_flop_count(grad_out, query, key, value)


def _custom_mapping():
    ops = torch.ops.aten
    mapping = {}
    if hasattr(ops, "_scaled_dot_product_flash_attention_for_cpu"):
        mapping[ops._scaled_dot_product_flash_attention_for_cpu] = _cpu_attention
        mapping[ops._scaled_dot_product_flash_attention_for_cpu_backward] = \
            _cpu_attention_backward
    return mapping


def training_step_flops(trainer, sample) -> int:
    """FLOPs of one forward and backward pass of ``trainer``'s model and
    criterion over ``sample`` (a CPU batch); the gradients are discarded."""
    sample, _ = trainer._prepare_sample(sample)
    trainer.model.train()
    trainer.criterion.train()
    with FlopCounterMode(display=False, custom_mapping=_custom_mapping()) as counter:
        loss, _, _ = trainer.criterion(trainer.model, sample)
        loss.backward()
    trainer.zero_grad()
    return counter.get_total_flops()


def device_peak_tflops(device_name: str):
    """The datasheet's dense fp16/bf16 peak for a GPU name, or None if unknown."""
    for name, tflops in PEAK_TFLOPS:
        if name in device_name:
            return tflops
    return None


# the net_input tensors that run along the source and along the target; any
# other tensor of the batch has one row a sentence (lengths, language ids)
SOURCE_KEYS = ("src_tokens",)
TARGET_KEYS = ("prev_output_tokens", "positions")


def sentence_sample(sample, row, pad):
    """Sentence ``row`` of a collated ``sample`` alone, without its padding
    (with it, at the batch's shape, when ``pad`` is None)."""
    net = sample["net_input"]

    def kept(tokens):
        return tokens.ne(pad) if pad is not None else torch.ones_like(tokens, dtype=torch.bool)

    src, tgt = kept(net["src_tokens"][row]), kept(sample["target"][row])
    alone = {}
    for key, value in net.items():
        if not torch.is_tensor(value):
            alone[key] = value
        elif key in SOURCE_KEYS:
            alone[key] = value[row][src].unsqueeze(0)
        elif key in TARGET_KEYS:
            alone[key] = value[row][tgt].unsqueeze(0)
        else:
            alone[key] = value[row:row + 1]
    if "src_lengths" in net:
        alone["src_lengths"] = src.sum().view(1)
    return {**sample, "net_input": alone, "target": sample["target"][row][tgt].unsqueeze(0),
            "ntokens": int(tgt.sum()), "nsentences": 1}


def real_token_flops(trainer, sample, pad, cache=None) -> int:
    """The FLOPs of ``sample``'s training step on its real tokens only: the
    sum over its sentences of the FLOPs of each alone, without padding
    (counted once per source and target length; ``cache`` keeps them across
    calls)."""
    cache = {} if cache is None else cache
    src = sample["net_input"]["src_tokens"].ne(pad).sum(dim=1).tolist()
    tgt = sample["target"].ne(pad).sum(dim=1).tolist()
    total = 0
    for row, shape in enumerate(zip(src, tgt)):
        if shape not in cache:
            cache[shape] = training_step_flops(trainer, sentence_sample(sample, row, pad))
        total += cache[shape]
    return total
