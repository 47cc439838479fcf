"""The languages proximity reads: one module per language behind one record of functions
(``base.Language``), listed in ``registry``."""
