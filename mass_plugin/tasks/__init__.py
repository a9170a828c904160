from .masked_s2s import MaskedS2SConfig, MaskedS2STask

__all__ = ["MaskedS2SConfig", "MaskedS2STask"]
