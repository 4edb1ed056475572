"""The fence grammar is written once, and the scanner's layers keep the house sizes (issue 45).

Read with ``ast``: the rules are in :mod:`fencecall.parsing._fences`, and every other module of
the scanner asks them instead of deciding a fence line or making a fenced call itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import fencecall.parsing

PARSING = Path(fencecall.parsing.__file__).parent
SCANNER = ("_scanner", "_regions", "_fast", "_state", "_kept", "_needles", "_fences")


def _tree(module: str) -> ast.Module:
    return ast.parse((PARSING / f"{module}.py").read_text())


def test_no_scanner_class_over_400_lines_and_no_function_over_60() -> None:
    too_long = [f"{module}.{node.name}: {node.end_lineno - node.lineno + 1}"
                for module in SCANNER for node in ast.walk(_tree(module))
                if isinstance(node, ast.ClassDef | ast.FunctionDef)
                and node.end_lineno is not None
                and node.end_lineno - node.lineno + 1 > (400 if isinstance(node, ast.ClassDef)
                                                         else 60)]
    assert too_long == []


def test_only_the_grammar_makes_a_fenced_call_or_block() -> None:
    """A closed fence becomes a call or block in ``closed_block`` alone."""
    makers = {module for module in SCANNER for node in ast.walk(_tree(module))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("ToolCall", "Codeblock")}
    assert makers == {"_fences"}


def test_only_the_grammar_names_what_a_fence_line_does() -> None:
    """The actions are defined in ``_fences`` and every other layer imports them from there."""
    defined = {module for module in SCANNER for node in ast.walk(_tree(module))
               if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
               and node.target.id in ("CLOSES", "OPENS", "CONTENT")}
    assert defined == {"_fences"}
    askers = {module for module in SCANNER for node in ast.walk(_tree(module))
              if isinstance(node, ast.Call) and (
                  (isinstance(node.func, ast.Name) and node.func.id == "line_action")
                  or (isinstance(node.func, ast.Attribute) and node.func.attr == "action"))}
    assert {"_scanner", "_regions", "_fast"} <= askers
