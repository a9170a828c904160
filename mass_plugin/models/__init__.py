from .transformer_mass import TransformerMassDecoder, TransformerMassModel

__all__ = ["TransformerMassDecoder", "TransformerMassModel"]
