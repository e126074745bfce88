"""Message catalogs: one module per language, the same keys in each (tests/test_i18n.py)."""
