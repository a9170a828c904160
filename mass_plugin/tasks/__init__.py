from .masked_s2s import MaskedS2SConfig, MaskedS2STask
from .unsupervised_translation import UnsupervisedTranslationConfig, UnsupervisedTranslationTask

__all__ = ["MaskedS2SConfig", "MaskedS2STask", "UnsupervisedTranslationConfig",
           "UnsupervisedTranslationTask"]
