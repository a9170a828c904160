from .stacks import TransformerMassDecoder, TransformerMassEncoder
from .transformer_mass import TransformerMassModel

__all__ = ["TransformerMassDecoder", "TransformerMassEncoder", "TransformerMassModel"]
