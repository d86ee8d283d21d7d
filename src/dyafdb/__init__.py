"""DyaFDB: dyadic evaluation of full-duplex spoken dialogue models."""

__version__ = "0.1.0"
