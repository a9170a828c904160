"""One measurement of benchmark.py, run in a fresh process: a configuration
(task, model, tokens per step, precision) trains on given batches with
fairseq's own Trainer, and the process reports speed, memory and FLOPs."""

import hashlib
import os
import resource
import statistics
import time

from benchmarks.bench_batches import load_sizes, make_batches, padding_shares, sample_batches

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def same_batches(sentences, max_tokens, count=None):
    """The sentences of a binarized split batched themselves (``sample``
    batching, bench_batches.py), and their lengths."""
    sizes = load_sizes(sentences)
    return sample_batches(sizes, max_tokens, count), sizes


def _status_mb(field):
    """A memory field of /proc/self/status (Linux) in MB, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak_rss():
    """Restart the kernel's peak-RSS count (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def build_trainer(spec, device):
    """fairseq's Trainer for ``spec`` as fairseq-train builds it. bf16 is set
    on the configuration, as fairseq-hydra-train's common.bf16=true does
    (fairseq-train's --bf16 also means a TPU); so is memory-efficient bf16
    (``spec["memory_efficient"]``, --memory-efficient-fp16 in fp16)."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    argv = spec["argv"] + ["--user-dir", os.path.join(REPO, "mass_plugin"),
                           "--lr", "0.0001", "--seed", "1",
                           "--max-tokens", str(spec["max_tokens"]),
                           "--required-batch-size-multiple", "1", "--num-workers", "0"]
    if "--optimizer" not in argv:
        argv += ["--optimizer", "adam"]
    memory_efficient = spec.get("memory_efficient", False)
    if device == "cpu":
        argv.append("--cpu")
    elif spec["precision"] == "fp16":
        argv.append("--memory-efficient-fp16" if memory_efficient else "--fp16")
    cfg = convert_namespace_to_omegaconf(
        options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv]))
    cfg.common.bf16 = spec["precision"] == "bf16"
    cfg.common.memory_efficient_bf16 = cfg.common.bf16 and memory_efficient
    utils.import_user_module(cfg.common)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    # fairseq resets CUDA's peak-memory count in every step (for its gb_free
    # log); without that the peak over the timed steps can be read
    trainer.cuda_env = None
    return task, model, trainer


def _synchronize(cuda):
    if cuda:
        import torch
        torch.cuda.synchronize()


def _settled(times, window=5, tolerance=0.05):
    """Whether the median of the last ``window`` step times is within
    ``tolerance`` of the median of the ``window`` before."""
    if len(times) < 2 * window:
        return False
    last = statistics.median(times[-window:])
    before = statistics.median(times[-2 * window:-window])
    return abs(last - before) <= tolerance * before


def warm_up(trainer, steps, args, cuda):
    """Steps (cycling through ``steps``, each a list of samples: one update)
    until the step time settles, at least ``args.warmup_min`` and at most
    ``args.warmup_max``; returns how many."""
    times = []
    while len(times) < args.warmup_max:
        start = time.perf_counter()
        trainer.train_step(steps[len(times) % len(steps)])
        _synchronize(cuda)
        times.append(time.perf_counter() - start)
        if len(times) >= args.warmup_min and _settled(times):
            break
    return len(times)


def timed_steps(trainer, steps, cuda):
    """Seconds for one update on each of ``steps`` (lists of samples), in order."""
    _synchronize(cuda)
    start = time.perf_counter()
    for step in steps:
        trainer.train_step(step)
    _synchronize(cuda)
    return time.perf_counter() - start


def peak_memory_mb(cuda, baseline_mb):
    """CUDA: the peak allocated since the last reset; CPU: the process's peak
    RSS since the last reset, above ``baseline_mb``."""
    if cuda:
        import torch
        return torch.cuda.max_memory_allocated() / 2**20
    peak = _status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return peak - baseline_mb


def reset_peak_memory(cuda):
    if cuda:
        import torch
        torch.cuda.reset_peak_memory_stats()
    _reset_peak_rss()


def prepare_steps(spec, args, dataset):
    """The collated samples a measurement trains on, grouped into updates
    (``spec["update_freq"]`` samples each), the index batches, the sentence
    lengths and the data cost per sample (masking and collation)."""
    steady = spec.get("steady", False)
    freq = spec.get("update_freq", 1)
    count = None if steady else (args.updates + 2) * freq
    if steady:
        count = args.steady_batches * freq
    index_batches, sizes = make_batches(spec["sentences"], spec["max_tokens"], count,
                                        spec.get("batching", "sample"),
                                        spec.get("corpus_sentences", 2_000_000))
    start = time.perf_counter()
    samples = [dataset.collater([dataset[i] for i in batch]) for batch in index_batches]
    data_time = (time.perf_counter() - start) / len(samples)
    steps = [samples[i:i + freq] for i in range(0, len(samples) - freq + 1, freq)]
    batches = [index_batches[i:i + freq] for i in range(0, len(samples) - freq + 1, freq)]
    return steps, batches, sizes, data_time


def worker(spec, args):
    """One measurement in this process; returns a dict."""
    import numpy as np

    # what the process holds before any data or model: subtracted below, so
    # that the CPU memory column is what training itself needs
    baseline_mb = _status_mb("VmRSS") or 0.0
    cuda = args.device == "cuda"
    started = time.perf_counter()
    task, model, trainer = build_trainer(spec, args.device)
    phases = {"setup_s": time.perf_counter() - started}
    # every configuration of a table trains on the same batches of the same
    # sentences: batches are made from the lengths of the binarized text
    steps, batches, sizes, data_time = prepare_steps(spec, args, task.dataset("train"))
    steady = spec.get("steady", False)

    started = time.perf_counter()
    if steady:  # the timed updates cycle through the batches from the first
        warmup = warm_up(trainer, steps, args, cuda)
        order = [i % len(steps) for i in range(args.updates)]
    else:
        warmup = 2
        for step in steps[:2]:
            trainer.train_step(step)
        order = list(range(2, len(steps)))
    phases["warmup_s"] = time.perf_counter() - started
    reset_peak_memory(cuda)
    elapsed = timed_steps(trainer, [steps[i] for i in order], cuda)
    peak_mb = peak_memory_mb(cuda, baseline_mb)
    timed = [sample for i in order for sample in steps[i]]
    sentences = sum(sample["net_input"]["src_tokens"].size(0) for sample in timed)
    # tokens of the original sentences (denoising shortens its source)
    src_tokens = sum(int(sizes[batch].sum()) for i in order for batch in batches[i])
    digest = hashlib.sha1(np.concatenate([b for i in order for b in batches[i]]).tobytes())
    src_pad, tgt_pad = padding_shares(timed, task.source_dictionary.pad())
    result = dict(name=spec["name"], step_s=elapsed / len(order), data_s=data_time,
                  sentences_per_s=sentences / elapsed, src_tokens_per_s=src_tokens / elapsed,
                  peak_mb=peak_mb, sentences_per_batch=sentences / len(timed),
                  batches=digest.hexdigest()[:12], warmup_steps=warmup,
                  timed_steps=len(order), precision=spec["precision"],
                  max_tokens=spec["max_tokens"], update_freq=spec.get("update_freq", 1),
                  src_pad=src_pad, tgt_pad=tgt_pad, **phases)
    if steady:
        result.update(steady_extras(spec, args, trainer, steps, order, elapsed, cuda))
    if spec.get("decode"):
        result.update(decode_speed(task, model, [s for i in order for s in steps[i]], cuda))
    return result


def steady_extras(spec, args, trainer, steps, order, elapsed, cuda):
    """Model FLOPs and utilisation of the timed updates, counted on every
    token (padding included) and on real tokens only; for a profiled row,
    the share of a step the GPU was busy."""
    import torch

    from benchmarks.flops import device_peak_tflops, real_token_flops, training_step_flops
    from benchmarks.step_profile import profile_steps

    extras = {}
    started = time.perf_counter()
    if spec.get("profile") and args.profile_steps > 0:
        path = os.path.join(args.profile_dir or args.workdir, f"profile-{spec['slug']}.txt")
        profiled = profile_steps(trainer, steps[:args.profile_steps], path, cuda)
        if profiled["kernel_s_per_step"] is not None:
            extras["gpu_busy"] = profiled["kernel_s_per_step"] / (elapsed / len(order))
        extras["profile"] = path
    extras["profile_s"] = time.perf_counter() - started
    name = torch.cuda.get_device_name() if cuda else "cpu"
    peak = args.peak_tflops or (device_peak_tflops(name) if cuda else None)
    extras.update(device=name, peak_tflops=peak)
    if not spec.get("count_flops", True):  # a row with another's FLOPs (same batches)
        return extras
    started = time.perf_counter()
    pad, cache = trainer.task.source_dictionary.pad(), {}
    padded = [sum(training_step_flops(trainer, s) for s in step) for step in steps]
    real = [sum(real_token_flops(trainer, s, pad, cache) for s in step) for step in steps]
    extras["flops_s"] = time.perf_counter() - started
    extras.update(step_flops=sum(padded[i] for i in order) / len(order),
                  step_real_flops=sum(real[i] for i in order) / len(order))
    extras.update(utilisation(extras, elapsed / len(order), peak))
    return extras


def utilisation(row, step_s, peak):
    """TFLOP/s and model FLOP utilisation, on every token and on real tokens,
    of a step of ``step_s`` seconds with ``row``'s FLOPs a step."""
    tflops, real = row["step_flops"] / step_s / 1e12, row["step_real_flops"] / step_s / 1e12
    return dict(tflops=tflops, real_tflops=real, mfu=tflops / peak if peak else None,
                real_mfu=real / peak if peak else None)


def decode_speed(task, model, samples, cuda):
    """Sentences/s of beam search (beam 5) with a fixed output length."""
    import torch
    from fairseq import utils
    from fairseq.sequence_generator import SequenceGenerator

    model.eval()
    length = 32
    generator = SequenceGenerator([model], task.target_dictionary, beam_size=5,
                                  max_len_a=0, max_len_b=length, min_len=length)
    sentences, start = 0, time.perf_counter()
    with torch.no_grad():
        for sample in samples[:4]:
            sample = utils.move_to_cuda(sample) if cuda else sample
            generator.generate([model], sample)
            sentences += sample["net_input"]["src_tokens"].size(0)
    _synchronize(cuda)
    return dict(decode_sentences_per_s=sentences / (time.perf_counter() - start))
