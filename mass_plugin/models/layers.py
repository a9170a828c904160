"""The encoder and decoder layers of ``transformer_mass``: fairseq's, with
the plugin's attention (:mod:`attention`) and, with ``--compile-layers``,
compiled, both chosen when the layer is built.

GELU runs in the model's own precision (torch's ``F.gelu``): fairseq's
``gelu`` converts its input to fp32 and back, so under --fp16/--bf16 every
feed-forward layer wrote and read an fp32 copy of its largest activation.
torch's half-precision kernels compute in fp32 inside and round once: the
values are the same (in fp32 the two are the same function), the copies go.
On an H200 this made the base model's fp16 step 12% faster
(docs/results/gpu.md, run 4).

``--compile-layers`` sends each layer's forward through torch.compile in
training (no incremental state); evaluation and beam search run it as
written. One compiled function per layer class, dynamic shapes, no duck
shapes. When compiling fails (no C++ compiler, a platform torch cannot
compile for) the first failure logs a warning and every layer runs
uncompiled from then on; out of memory is not a compile failure and stops
the step as usual. MASS_PLUGIN_COMPILE_BACKEND names another torch.compile
backend than inductor (``aot_eager`` traces the same graphs without
generating code).
"""

import logging
import os

import torch
import torch.nn.functional as F
from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)

from .attention import MassAttention

logger = logging.getLogger(__name__)


def _model_precision_gelu(layer, cfg):
    if cfg.activation_fn == "gelu":
        layer.activation_fn = F.gelu


def _fused(cfg):
    """Whether ``cfg`` (the model's options) asks for --attention sdpa."""
    return getattr(cfg, "attention", None) == "sdpa"


class MassEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer; its self-attention a :class:`MassAttention`
    on the path ``cfg.attention`` names."""

    def __init__(self, cfg, return_fc=False):
        super().__init__(cfg, return_fc)
        _model_precision_gelu(self, cfg)

    def build_self_attention(self, embed_dim, cfg):
        return MassAttention(embed_dim, cfg.encoder.attention_heads,
                             dropout=cfg.attention_dropout, self_attention=True,
                             q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
                             fused=_fused(cfg))


class MassDecoderLayer(TransformerDecoderLayerBase):
    """fairseq's decoder layer; its self-attention a causal
    :class:`MassAttention`, its cross-attention a :class:`MassAttention`,
    on the path ``cfg.attention`` names."""

    def __init__(self, cfg, no_encoder_attn=False):
        super().__init__(cfg, no_encoder_attn)
        _model_precision_gelu(self, cfg)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        return MassAttention(embed_dim, cfg.decoder.attention_heads,
                             dropout=cfg.attention_dropout, add_bias_kv=add_bias_kv,
                             add_zero_attn=add_zero_attn, self_attention=True,
                             q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
                             fused=_fused(cfg), is_causal=True)

    def build_encoder_attention(self, embed_dim, cfg):
        return MassAttention(embed_dim, cfg.decoder.attention_heads, kdim=cfg.encoder.embed_dim,
                             vdim=cfg.encoder.embed_dim, dropout=cfg.attention_dropout,
                             encoder_decoder_attention=True, q_noise=self.quant_noise,
                             qn_block_size=self.quant_noise_block_size, fused=_fused(cfg))


class Compiler:
    """One compiled function per layer class (torch.compile's ``backend``:
    inductor unless MASS_PLUGIN_COMPILE_BACKEND names another); ``failed``
    once compiling has failed in this process."""

    def __init__(self, backend=None):
        self.backend, self.compiled, self.failed = backend, {}, False

    def function(self, cls):
        if cls not in self.compiled:
            backend = (self.backend or os.environ.get("MASS_PLUGIN_COMPILE_BACKEND")
                       or "inductor")
            eager = next(base.forward for base in cls.__mro__ if base.__dict__.get("forward")
                         and not issubclass(base, CompiledLayer))
            self.compiled[cls] = torch.compile(eager, dynamic=True, backend=backend)
        return self.compiled[cls]


COMPILER = Compiler()


class CompiledLayer:
    """A mixin before a layer class: training calls without incremental
    state go through torch.compile."""

    def forward(self, *args, **kwargs):
        # a decoder layer takes (x, encoder_out, encoder_padding_mask,
        # incremental_state, ...); fairseq passes them by position
        incremental = kwargs.get("incremental_state", args[3] if len(args) > 3 else None)
        if not self.training or incremental is not None or COMPILER.failed:
            return super().forward(*args, **kwargs)
        try:
            # no duck shapes: a batch whose size happens to equal another
            # dimension would tie the two in the graph's guards and make the
            # next batch compile again
            with _no_duck_shapes():
                return COMPILER.function(type(self))(self, *args, **kwargs)
        except torch._dynamo.exc.TorchDynamoException as error:
            cause = _root_cause(error)
            if isinstance(cause, torch.OutOfMemoryError):
                raise cause from error
            COMPILER.failed = True
            logger.warning("--compile-layers: compiling %s failed, every layer runs "
                           "uncompiled (%s: %s)", type(self).__name__, type(cause).__name__,
                           (str(cause).strip() or "?").splitlines()[0][:300])
            return super().forward(*args, **kwargs)


def _root_cause(error):
    """The innermost exception torch's compile errors wrap."""
    while (getattr(error, "inner_exception", None) or error.__cause__) is not None:
        error = getattr(error, "inner_exception", None) or error.__cause__
    return error


def _no_duck_shapes():
    """A context in which torch.compile gives every dimension a symbol of its
    own, even one of the same size as another."""
    from torch.fx.experimental import _config

    return _config.patch(use_duck_shape=False)


class CompiledMassEncoderLayer(CompiledLayer, MassEncoderLayer):
    pass


class CompiledMassDecoderLayer(CompiledLayer, MassDecoderLayer):
    pass


def encoder_layer(cfg, return_fc=False):
    """The encoder layer ``cfg`` asks for (compiled with --compile-layers)."""
    cls = CompiledMassEncoderLayer if getattr(cfg, "compile_layers", False) else MassEncoderLayer
    return cls(cfg, return_fc)


def decoder_layer(cfg, no_encoder_attn=False):
    """The decoder layer ``cfg`` asks for (compiled with --compile-layers)."""
    cls = CompiledMassDecoderLayer if getattr(cfg, "compile_layers", False) else MassDecoderLayer
    return cls(cfg, no_encoder_attn)
