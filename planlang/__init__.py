"""planlang."""
