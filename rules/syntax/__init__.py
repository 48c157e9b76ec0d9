"""Rules the readers report while reading a file: syntax errors, interpreter limits,
suppression comments, configurations not analysed, unreachable recipe code."""
