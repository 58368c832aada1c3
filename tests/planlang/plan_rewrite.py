"""The plan as planlang's checker rewrites it: which guards it kept (shared by the tests)."""

import ast

from planlang.check.infer import Kinds
from planlang.check.policy import PlanPolicy


def rewritten(source: str) -> str:
    tree = ast.parse(source)
    policy = PlanPolicy()
    policy.kinds = Kinds(tree)
    policy.visit(tree)
    return ast.unparse(tree)
