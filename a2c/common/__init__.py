"""Small shared utilities every floor uses and that import nothing of a2c above them: user-facing errors, the
name → component registries and component specs, reading the user's text files, text normalisation, counted
wording, credential masking, stable seeds, checks for untrusted text."""
