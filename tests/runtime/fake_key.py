"""The API key the runtime tests' fake server takes: a test fails if it is ever printed, logged
or stored. A module of its own (not ``conftest``), so a test imports it by a name that no other
test folder's conftest shadows when several folders are collected in one run."""

KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"
