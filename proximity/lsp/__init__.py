"""`proximity lsp`: the language server that brings the pre-edit check into any editor."""
