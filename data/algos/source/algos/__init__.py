"""algos: small classic algorithms with doctest examples, the default benchmark corpus."""
