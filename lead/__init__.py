"""lead."""
