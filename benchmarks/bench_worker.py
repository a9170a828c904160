"""One measurement of benchmark.py, run in a fresh process: a configuration
(task, model, tokens per step, precision) trains on given batches with
fairseq's own Trainer, and the process reports speed, memory and FLOPs."""

import hashlib
import os
import random
import resource
import statistics
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def same_batches(sentences, max_tokens, count=None):
    """Batches of sentence indices of ``sentences`` (a binarized split), at
    most ``max_tokens`` each and sorted by length as fairseq makes them,
    shuffled with a fixed seed; ``count`` of them (the list repeated as
    needed), or each once. Also returns the sentence lengths."""
    import numpy as np
    from fairseq.data import data_utils

    dataset = data_utils.load_indexed_dataset(sentences, None)
    sizes = np.array(dataset.sizes, dtype=np.int64)  # a copy: the original is a view of
    del dataset                                    # a memory map closed with the dataset
    order = np.argsort(sizes, kind="mergesort")
    batches = data_utils.batch_by_size(order, lambda i: sizes[i], max_tokens=max_tokens)
    random.Random(0).shuffle(batches)
    if count is not None:
        batches = (batches * (count // len(batches) + 1))[:count]
    return batches, sizes


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
    (fairseq-train's --bf16 also means a TPU)."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    argv = spec["argv"] + ["--user-dir", os.path.join(REPO, "mass_plugin"),
                           "--optimizer", "adam", "--lr", "0.0001", "--seed", "1",
                           "--max-tokens", str(spec["max_tokens"]),
                           "--required-batch-size-multiple", "1", "--num-workers", "0"]
    if device == "cpu":
        argv.append("--cpu")
    elif spec["precision"] == "fp16":
        argv.append("--fp16")
    cfg = convert_namespace_to_omegaconf(
        options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv]))
    cfg.common.bf16 = spec["precision"] == "bf16"
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


def warm_up(trainer, samples, args, cuda):
    """Steps (cycling through ``samples``) until the step time settles, at
    least ``args.warmup_min`` and at most ``args.warmup_max``; returns how many."""
    times = []
    while len(times) < args.warmup_max:
        start = time.perf_counter()
        trainer.train_step([samples[len(times) % len(samples)]])
        _synchronize(cuda)
        times.append(time.perf_counter() - start)
        if len(times) >= args.warmup_min and _settled(times):
            break
    return len(times)


def timed_steps(trainer, samples, cuda):
    """Seconds for one update on each of ``samples``, in order."""
    _synchronize(cuda)
    start = time.perf_counter()
    for sample in samples:
        trainer.train_step([sample])
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
    dataset = task.dataset("train")
    # every configuration of a table trains on the same batches of the same
    # sentences: batches are made from the lengths of the binarized text
    steady = spec.get("steady", False)
    index_batches, sizes = same_batches(spec["sentences"], spec["max_tokens"],
                                        None if steady else args.updates + 2)
    start = time.perf_counter()  # the data cost: fetch (masking) and collate
    samples = [dataset.collater([dataset[i] for i in batch]) for batch in index_batches]
    data_time = (time.perf_counter() - start) / len(samples)

    started = time.perf_counter()
    if steady:  # the timed updates cycle through the batches from the first
        warmup = warm_up(trainer, samples, args, cuda)
        order = [i % len(samples) for i in range(args.updates)]
    else:
        warmup = 2
        for sample in samples[:2]:
            trainer.train_step([sample])
        order = list(range(2, len(samples)))
    phases["warmup_s"] = time.perf_counter() - started
    reset_peak_memory(cuda)
    elapsed = timed_steps(trainer, [samples[i] for i in order], cuda)
    peak_mb = peak_memory_mb(cuda, baseline_mb)
    sentences = sum(samples[i]["net_input"]["src_tokens"].size(0) for i in order)
    # tokens of the original sentences (denoising shortens its source)
    src_tokens = sum(int(sizes[index_batches[i]].sum()) for i in order)
    digest = hashlib.sha1(np.concatenate([index_batches[i] for i in order]).tobytes())
    result = dict(name=spec["name"], step_s=elapsed / len(order), data_s=data_time,
                  sentences_per_s=sentences / elapsed, src_tokens_per_s=src_tokens / elapsed,
                  peak_mb=peak_mb, sentences_per_batch=sentences / len(order),
                  batches=digest.hexdigest()[:12], warmup_steps=warmup,
                  timed_steps=len(order), precision=spec["precision"],
                  max_tokens=spec["max_tokens"], **phases)
    if steady:
        result.update(steady_extras(spec, args, trainer, samples, order, elapsed, cuda))
    if spec.get("decode"):
        result.update(decode_speed(task, model, [samples[i] for i in order], cuda))
    return result


def steady_extras(spec, args, trainer, samples, order, elapsed, cuda):
    """Model FLOPs and utilisation of the timed updates; for a profiled row,
    the share of a step the GPU was busy."""
    import torch
    from flops import device_peak_tflops, training_step_flops
    from step_profile import profile_steps

    extras = {}
    started = time.perf_counter()
    if spec.get("profile") and args.profile_steps > 0:
        path = os.path.join(args.workdir, f"profile-{spec['slug']}.txt")
        profiled = profile_steps(trainer, samples[:args.profile_steps], path, cuda)
        if profiled["kernel_s_per_step"] is not None:
            extras["gpu_busy"] = profiled["kernel_s_per_step"] / (elapsed / len(order))
        extras["profile"] = path
    extras["profile_s"] = time.perf_counter() - started
    started = time.perf_counter()
    flops = [training_step_flops(trainer, sample) for sample in samples]
    extras["flops_s"] = time.perf_counter() - started
    tflops = sum(flops[i] for i in order) / elapsed / 1e12
    name = torch.cuda.get_device_name() if cuda else "cpu"
    peak = args.peak_tflops or (device_peak_tflops(name) if cuda else None)
    extras.update(device=name, tflops=tflops, peak_tflops=peak,
                  mfu=tflops / peak if peak else None)
    return extras


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
