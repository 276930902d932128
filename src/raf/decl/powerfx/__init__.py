"""Power Fx, the expression language of declarative workflows (a subset): its syntax,
values, functions, dates, patterns, and the evaluation of `=` expressions under limits.
Expressions are parsed into a tree and walked, never passed to `eval`.
"""

from raf.decl.powerfx.expressions import Expression, ExpressionError
from raf.decl.powerfx.functions import FUNCTIONS
from raf.decl.powerfx.variables import VariableError, Variables

__all__ = ["FUNCTIONS", "Expression", "ExpressionError", "VariableError", "Variables"]
