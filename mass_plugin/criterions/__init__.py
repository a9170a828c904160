from .encoder_mlm_loss import EncoderMLMLoss
from .masked_s2s_loss import MaskedS2SLoss

__all__ = ["EncoderMLMLoss", "MaskedS2SLoss"]
