"""``--compile-layers``: each encoder and decoder layer through torch.compile.

A training step of the base model launches a few thousand small kernels
around its matrix products (layer norms, dropouts, residual additions,
biases, activations), each reading and writing its whole activation.
torch.compile fuses them: each layer compiles to one graph with no breaks.

Compiling is for training: a layer runs its compiled forward only when the
model trains and no incremental state is given, so evaluation and beam
search run fairseq's code as before. Shapes are dynamic (fairseq's batches
differ in length from step to step). The first failure to compile (no C++
compiler for the CPU backend, a platform torch cannot compile for) logs a
warning and every layer runs uncompiled from then on. The weights are the
layer's own: checkpoints are the same either way. MASS_PLUGIN_COMPILE_BACKEND
names another torch.compile backend than inductor (``aot_eager`` traces the
same graphs without generating code, in seconds where inductor takes minutes
on a CPU).
"""

import logging
import os

import torch

logger = logging.getLogger(__name__)


class Compiler:
    """One compiled function per layer class, shared by every layer of it
    (torch.compile's ``backend``: inductor by default); ``failed`` once
    compiling has failed in this process."""

    def __init__(self, backend=None):
        backend = backend or os.environ.get("MASS_PLUGIN_COMPILE_BACKEND") or "inductor"
        self.backend, self.compiled, self.failed = backend, {}, False

    def function(self, cls):
        if cls not in self.compiled:
            self.compiled[cls] = torch.compile(_eager_forward(cls), dynamic=True,
                                               backend=self.backend)
        return self.compiled[cls]


COMPILER = Compiler()


def _eager_forward(cls):
    """The forward of ``cls``'s first base class that is not a compiled one."""
    return next(base.forward for base in cls.__mro__ if not getattr(base, "compiled", False))


class CompiledLayer:
    """A mixin placed before a fairseq layer class: training calls without
    incremental state go through torch.compile."""

    compiled = True

    def forward(self, *args, **kwargs):
        eager = _eager_forward(type(self))
        # a decoder layer takes (x, encoder_out, encoder_padding_mask,
        # incremental_state, ...); fairseq passes them by position
        incremental = kwargs.get("incremental_state", args[3] if len(args) > 3 else None)
        if not self.training or incremental is not None or COMPILER.failed:
            return eager(self, *args, **kwargs)
        try:
            # no duck shapes: a batch whose size happens to equal another
            # dimension (the model's, the length) would tie the two in the
            # graph's guards and make the next batch compile again
            with no_duck_shapes():
                return COMPILER.function(type(self))(self, *args, **kwargs)
        except Exception as error:  # torch's compile errors have no common base class
            COMPILER.failed = True
            cause = error
            # torch wraps the backend's error
            while (getattr(cause, "inner_exception", None) or cause.__cause__) is not None:
                cause = getattr(cause, "inner_exception", None) or cause.__cause__
            logger.warning("--compile-layers: compiling %s failed, every layer runs "
                           "uncompiled (%s: %s)", type(self).__name__,
                           type(cause).__name__, (str(cause).strip() or "?").splitlines()[0][:300])
            return eager(self, *args, **kwargs)


def no_duck_shapes():
    """A context in which torch.compile gives every dimension a symbol of its
    own, even one of the same size as another."""
    from torch.fx.experimental import _config

    return _config.patch(use_duck_shape=False)


_CLASSES = {}


def _compiled_class(cls):
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"Compiled{cls.__name__}", (CompiledLayer, cls), {})
    return _CLASSES[cls]


def compile_layers(model) -> None:
    """Make every encoder and decoder layer of ``model`` a compiled layer (in
    place: a subclass with no state of its own)."""
    for layer in list(model.encoder.layers) + list(model.decoder.layers):
        if not getattr(layer, "compiled", False):
            layer.__class__ = _compiled_class(type(layer))
