"""``--optimizer torch_adam``: fairseq's Adam through torch's multi-tensor kernels.

fairseq's ``adam`` uses apex's FusedAdam when apex is installed and its own
Python loop over the parameters otherwise: about ten kernels a parameter a
step, and with ``--bf16`` (which fairseq never flattens) or
``--memory-efficient-fp16`` also a norm, a conversion and a copy a
parameter. ``torch_adam`` computes the same update with torch's fused Adam
kernel (foreach where no fused kernel exists), one launch for many
parameters, and its gradient norm and clipping with foreach kernels.

The update is fairseq's: decoupled weight decay (AdamW), bias corrections,
and ``eps`` added to the square root of the uncorrected second moment
(torch adds it after the correction: the ``eps`` handed to torch's kernel is
scaled so that the two agree).

Under ``--memory-efficient-fp16`` or ``--memory-efficient-bf16`` (fairseq's
``MemoryEfficientFP16Optimizer``) it keeps an fp32 master copy of each half-
precision weight in its state, as ``--fp16`` does outside the optimizer, so
no precision is lost; the state dict carries the master copies, so a resumed
run continues from them. It divides the gradients by fairseq's loss scale
itself (``supports_step_with_scale``) and accepts one flat parameter
(``--fp16`` flattens its fp32 copy).
"""

import ast
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, List

import torch
from fairseq.dataclass import FairseqDataclass
from fairseq.optim import FairseqOptimizer, register_optimizer
from omegaconf import II, OmegaConf
from torch.optim.adam import adam as functional_adam

HALF = (torch.float16, torch.bfloat16)


@dataclass
class TorchAdamConfig(FairseqDataclass):
    adam_betas: Any = field(default=(0.9, 0.999), metadata={"help": "betas for Adam"})
    adam_eps: float = field(default=1e-8, metadata={"help": "epsilon for Adam"})
    weight_decay: float = field(default=0.0, metadata={"help": "decoupled weight decay"})
    lr: List[float] = II("optimization.lr")


class MasterWeightAdam(torch.optim.Optimizer):
    """Adam as fairseq's ``adam`` computes it, over fp32 master copies of
    half-precision parameters, through torch's functional Adam."""

    supports_memory_efficient_fp16 = True
    supports_flat_params = True
    supports_step_with_scale = True

    def __init__(self, params, lr, betas, eps, weight_decay):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))

    def _state(self, p):
        state = self.state[p]
        if not state:
            fused = p.device.type in ("cuda", "cpu")
            state["step"] = torch.zeros((), dtype=torch.float32,
                                        device=p.device if fused else "cpu")
            state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
            state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
            if p.dtype in HALF:
                state["master"] = p.detach().float()
        return state

    @torch.no_grad()
    def step(self, closure=None, scale=1.0):
        """One update; the gradients are divided by ``scale`` first (a number
        or a tensor on the parameters' device)."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update(group, params, scale)
        return loss

    def _update(self, group, params, scale):
        states = [self._state(p) for p in params]
        masters = [s.get("master", p) for s, p in zip(states, params)]
        grads = [p.grad if p.dtype not in HALF else p.grad.float() for p in params]
        if torch.is_tensor(scale) or scale != 1.0:
            torch._foreach_div_(grads, scale)
        # the update count of each parameter, on the host (torch keeps it in a
        # tensor): parameters that missed an update are a step behind
        by_step = {}
        for i, state in enumerate(states):
            state["host_step"] = state.get("host_step", 0) + 1
            by_step.setdefault(state["host_step"], []).append(i)
        beta1, beta2 = group["betas"]
        for step, chosen in by_step.items():
            def pick(tensors):
                return [tensors[i] for i in chosen]
            fused = all(masters[i].device.type in ("cuda", "cpu") for i in chosen)
            functional_adam(
                pick(masters), pick(grads), pick([s["exp_avg"] for s in states]),
                pick([s["exp_avg_sq"] for s in states]), [], pick([s["step"] for s in states]),
                foreach=not fused, fused=fused, decoupled_weight_decay=True, amsgrad=False,
                beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                # fairseq adds eps to sqrt(v), torch to sqrt(v / (1 - beta2^t))
                eps=group["eps"] / math.sqrt(1 - beta2 ** step), maximize=False)
        half = [(p, m) for p, m in zip(params, masters) if p is not m]
        if half:
            torch._foreach_copy_([p for p, _ in half], [m for _, m in half])

    def load_state_dict(self, state_dict):
        """torch casts a loaded state to its parameter's dtype: the fp32
        moments and master copies of half-precision weights are put back."""
        super().load_state_dict(state_dict)
        saved = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        for index, p in zip(saved, params):
            for key, value in state_dict["state"].get(index, {}).items():
                if key != "step" and torch.is_tensor(value) and value.is_floating_point():
                    self.state[p][key] = value.to(p.device, torch.float32)


@register_optimizer("torch_adam", dataclass=TorchAdamConfig)
class TorchAdam(FairseqOptimizer):
    """fairseq's ``adam`` update (AdamW's decoupled weight decay), computed by
    torch's fused or foreach kernels; see the module's docstring."""

    def __init__(self, cfg: TorchAdamConfig, params):
        super().__init__(cfg)
        self._optimizer = MasterWeightAdam(params, **self.optimizer_config)

    @property
    def optimizer_config(self):
        lr = self.cfg.lr[0] if isinstance(self.cfg.lr, Collection) else self.cfg.lr
        betas = self.cfg.adam_betas
        if isinstance(betas, str):
            betas = ast.literal_eval(betas)
        elif not isinstance(betas, (tuple, list)):
            betas = OmegaConf.to_container(betas)
        return {"lr": lr, "betas": tuple(betas), "eps": self.cfg.adam_eps,
                "weight_decay": self.cfg.weight_decay}

    def clip_grad_norm(self, max_norm, aggregate_norm_fn=None):
        """fairseq's clip_grad_norm_ with foreach kernels: the norm of all
        gradients in fp32, and every gradient scaled by min(1, max_norm /
        (norm + 1e-6)) when ``max_norm`` > 0."""
        grads = [p.grad.detach() for p in self.params if p.grad is not None]
        if not grads:
            return torch.tensor(0.0)
        norms = torch._foreach_norm(grads, 2, dtype=torch.float32)
        total = torch.linalg.vector_norm(torch.stack(norms))
        if aggregate_norm_fn is not None:
            total = aggregate_norm_fn(total)
        if max_norm > 0:
            clip = (float(max_norm) / (total + 1e-6)).clamp_(max=1)
            torch._foreach_mul_(grads, clip)
        return total
