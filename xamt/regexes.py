"""Regular expressions from user files, refused when they can backtrack catastrophically.

Python's ``re`` backtracks: ``(a+)+b`` takes exponential time on ``"aaaa...c"``, so one entry
of a user's known-differences file could hang a campaign whatever its ``--budget``. A
linear-time engine (RE2) would rule that out, but it is a compiled dependency and refuses
lookarounds, which xamt's own reviewed file uses (``^(?!.*\\(result dtype ...\\))``). So xamt
keeps ``re`` and checks each pattern's parse tree (``re._parser``, Python 3.11+) before
compiling it, refusing the shapes behind exponential backtracking:

- a pattern repeated without bound that can match the empty string (``(a*)*``, ``(a|)*``);
- inside such a repetition, a variable-length part whose characters may also start what
  follows it (the next round or the rest), so that one text splits into rounds in many
  ways: ``(a+)+``, ``(.+.+)+``, ``(\\s*\\w+)*``; ``(\\w+\\.)+`` is fine, the dot ends each round;
- inside such a repetition, alternatives that can start with the same character
  (``(a|a)*``, ``(a|ab)*``).

Note:
    The check is conservative where it cannot tell (a negated class or ``.`` may be any
    character), so a rare safe pattern is refused; rewrite it so that each round of a
    repetition starts with what the previous one cannot end with. Polynomial backtracking
    (``.*.*.*x``) is not refused: texts matched are at most a few thousand characters.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from typing import Any

ANY = "any"  # an atom that stands for every character
# Category atoms and the characters they hold, for overlap tests; negated categories are ANY.
_CATEGORIES = {
    sre.CATEGORY_DIGIT: re.compile(r"\d"),
    sre.CATEGORY_WORD: re.compile(r"\w"),
    sre.CATEGORY_SPACE: re.compile(r"\s"),
}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}
# a range wider than this is taken to overlap every category
_RANGE_PROBE = 512

Atoms = frozenset[Any]


class UnboundedPattern(ValueError):
    """A pattern refused by :func:`compile_bounded`: the message says why."""


def compile_bounded(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern)`` after the check of this module (:class:`UnboundedPattern` for a
    pattern that can backtrack exponentially, :class:`re.error` for one that is not a regex)."""
    tree = sre_parse.parse(pattern, flags)
    problem = _problem(list(tree), frozenset(), in_loop=False)
    if problem:
        raise UnboundedPattern(problem)
    return re.compile(pattern, flags)


def _problem(items: list[Any], follow: Atoms, *, in_loop: bool) -> str:
    """What makes the sequence ``items`` backtrack exponentially ("" for nothing), given the
    characters ``follow`` that may come right after it, inside an unbounded repetition when
    ``in_loop``."""
    after = follow
    for op, av in reversed(items):
        if op in _REPEATS:
            lo, hi, body = av
            body = list(body)
            unbounded = hi == sre.MAXREPEAT
            first, nullable = _first(body)
            if unbounded and nullable:
                return "it repeats without bound something that can match the empty string"
            # inside a repetition, a part of variable length must end where what follows it
            # cannot go on: else its characters go to this part or the next in many ways
            if in_loop and lo != hi and _overlap(_chars(body), after):
                return (
                    "it nests repetitions whose rounds can split one text in many ways "
                    "(a repeated part may also start what follows it)"
                )
            # a repetition of more than one round is a loop: ``(.*a){12}`` backtracks in
            # polynomial time of degree 12
            inner = _problem(body, first | after, in_loop=in_loop or hi > 1)
            if inner:
                return inner
        elif op == sre.SUBPATTERN:
            inner = _problem(list(av[3]), after, in_loop=in_loop)
            if inner:
                return inner
        elif op == sre.ATOMIC_GROUP:
            inner = _problem(list(av), after, in_loop=in_loop)
            if inner:
                return inner
        elif op == sre.BRANCH:
            branches = [list(b) for b in av[1]]
            if in_loop:
                # an alternative that can match nothing starts with what follows the alternation
                firsts = [a | after if n else a for a, n in map(_first, branches)]
                for i, a in enumerate(firsts):
                    if any(_overlap(a, b) for b in firsts[i + 1 :]):
                        return "it repeats alternatives that can start with the same character"
            for branch in branches:
                inner = _problem(branch, after, in_loop=in_loop)
                if inner:
                    return inner
        elif op == sre.GROUPREF_EXISTS:
            for branch in av[1:]:
                if branch is not None:
                    inner = _problem(list(branch), after, in_loop=in_loop)
                    if inner:
                        return inner
        elif op in (sre.ASSERT, sre.ASSERT_NOT):  # a lookaround backtracks like the rest
            inner = _problem(list(av[1]), frozenset(), in_loop=in_loop)
            if inner:
                return inner
        first, nullable = _first([(op, av)])
        after = first | after if nullable else first
    return ""


def _first(items: list[Any]) -> tuple[Atoms, bool]:
    """The atoms ``items`` may start with, and whether it can match the empty string."""
    found: set[Any] = set()
    for op, av in items:
        atoms, nullable = _first_of(op, av)
        found |= atoms
        if not nullable:
            return frozenset(found), False
    return frozenset(found), True


def _first_of(op: Any, av: Any) -> tuple[Atoms, bool]:
    if op == sre.LITERAL:
        return frozenset({av}), False
    if op in (sre.NOT_LITERAL, sre.ANY):
        return frozenset({ANY}), False
    if op == sre.IN:
        return _charset(av), False
    if op in _REPEATS:
        atoms, nullable = _first(list(av[2]))
        return atoms, nullable or av[0] == 0
    if op == sre.SUBPATTERN:
        return _first(list(av[3]))
    if op == sre.ATOMIC_GROUP:
        return _first(list(av))
    if op == sre.BRANCH:
        results = [_first(list(b)) for b in av[1]]
        return frozenset().union(*(a for a, _ in results)), any(n for _, n in results)
    if op == sre.GROUPREF_EXISTS:
        yes = _first(list(av[1]))
        no = _first(list(av[2])) if av[2] is not None else (frozenset(), True)
        return yes[0] | no[0], yes[1] or no[1]
    if op == sre.GROUPREF:
        return frozenset({ANY}), True
    return frozenset(), True  # anchors and lookarounds: zero width


def _chars(items: list[Any]) -> Atoms:
    """Every atom ``items`` may consume, wherever."""
    found: set[Any] = set()
    for op, av in items:
        if op in _REPEATS:
            found |= _chars(list(av[2]))
        elif op == sre.SUBPATTERN:
            found |= _chars(list(av[3]))
        elif op == sre.ATOMIC_GROUP:
            found |= _chars(list(av))
        elif op == sre.BRANCH:
            for b in av[1]:
                found |= _chars(list(b))
        elif op == sre.GROUPREF_EXISTS:
            for b in av[1:]:
                if b is not None:
                    found |= _chars(list(b))
        elif op in (sre.ASSERT, sre.ASSERT_NOT, sre.AT):
            continue
        else:
            found |= _first_of(op, av)[0]
    return frozenset(found)


def _charset(items: Any) -> Atoms:
    """A character class (``IN``) as atoms: characters, ranges, categories; ANY if negated."""
    atoms: set[Any] = set()
    for op, av in items:
        if op == sre.NEGATE:
            return frozenset({ANY})
        if op == sre.LITERAL:
            atoms.add(av)
        elif op == sre.RANGE:
            atoms.add(("range", av[0], av[1]))
        elif op == sre.CATEGORY and av in _CATEGORIES:
            atoms.add(("category", av))
        else:
            return frozenset({ANY})
    return frozenset(atoms)


def _overlap(a: Atoms, b: Atoms) -> bool:
    """Whether two atom sets may hold a common character (conservative)."""
    if not a or not b:
        return False
    if ANY in a or ANY in b:
        return True
    return any(_atoms_overlap(x, y) for x in a for y in b)


def _atoms_overlap(x: Any, y: Any) -> bool:
    if isinstance(x, int) and isinstance(y, int):  # case folded: a pattern may ignore case
        return chr(x).casefold() == chr(y).casefold()
    if isinstance(y, int):
        x, y = y, x
    if isinstance(x, int):  # a character against a range or a category
        if y[0] == "range":
            return bool(y[1] <= x <= y[2])
        return _CATEGORIES[y[1]].match(chr(x)) is not None
    if x[0] == "range" and y[0] == "range":
        return bool(x[1] <= y[2] and y[1] <= x[2])
    if x[0] == "category" and y[0] == "category":
        # \w holds \d; \s shares nothing with \w or \d
        return x[1] == y[1] or {x[1], y[1]} == {sre.CATEGORY_WORD, sre.CATEGORY_DIGIT}
    rng, cat = (x, y) if x[0] == "range" else (y, x)
    if rng[2] - rng[1] > _RANGE_PROBE:
        return True
    pattern = _CATEGORIES[cat[1]]
    return any(pattern.match(chr(c)) for c in range(rng[1], rng[2] + 1))
