from .masked_s2s_loss import MaskedS2SLoss

__all__ = ["MaskedS2SLoss"]
