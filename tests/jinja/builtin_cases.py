#!/usr/bin/env python3
"""Edge cases of every filter, test and method, rendered by python3-jinja2.

Generates one small template per (builtin, arguments, input) over inputs that
real chat templates meet at the edges: none, undefined, empty string / list /
dict, and mixed-type values (given both as template literals and as context
data), plus filter chains over them. Renders each with jinja2 configured as
Hugging Face does (jinja2_reference.py) and prints, as JSON:

  {"context": {...},
   "names": {"filters": [...], "tests": [...], "methods": {"str": [...], ...}},
   "cases": [{"template": "...", "ok": true, "output": "..."} |
             {"template": "...", "ok": false, "error": "Type: message"}]}

`names` lists what the cases cover, so the C++ side can check that every
builtin it implements appears. Usage: builtin_cases.py
"""
import copy
import json
import os
import re
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jinja2_reference  # noqa: E402

# Context data (what a chat request carries) and template literals.
CONTEXT = {
    "n": None, "es": "", "el": [], "ed": {},
    "s": "Hello World", "ws": "  a b\n c  ", "u": "\u00c9t\u00e9 \u00df \u3000x\u00a0",
    "i": 3, "neg": -2, "f": 2.5, "t": True, "fa": False,
    "li": [3, 1, 2], "ls": ["b", "A", "a"], "lm": [1, "a", None, 2.5, True], "ln": [[1, 2], [3]],
    "d": {"b": 1, "a": "x"}, "dm": {"k": None, "n": [1], "s": "v"},
    "ms": [{"role": "user", "content": "hi", "n": 2}, {"role": "assistant", "content": None, "n": 1},
           {"role": "tool"}],
    "num_s": " 42 ", "float_s": "1.5e3", "md": "a </s> <|im_start|> b",
}
INPUTS = sorted(CONTEXT) + [
    "missing", "none", "''", "[]", "{}", "()", "(1, 'a')", "[none, '', 0]", "'x'", "0", "-0.0", "1e16",
    "{'a': none}", "[{}, []]", "true", "'%s|%d'",
]

# Arguments tried for each filter (the empty string: no arguments).
FILTER_ARGS = {
    "abs": [""], "attr": ["('a')", "('upper')"], "batch": ["(2)", "(2, 'F')"],
    "capitalize": [""], "center": ["", "(9)"], "count": [""], "d": ["", "('D')", "('D', true)"],
    "default": ["", "('D')", "('D', boolean=true)"],
    "dictsort": ["", "(by='value')", "(true, 'key', true)"], "e": [""], "escape": [""], "first": [""],
    "float": ["", "(7.5)"], "forceescape": [""], "format": ["", "(1, 'x')", "('a')"], "indent": ["", "(2, true)", "(2, blank=true)"],
    "int": ["", "(7)"], "items": [""], "join": ["", "(', ')", "('-', attribute='role')"], "last": [""],
    "length": [""], "list": [""], "lower": [""], "map": ["('string')", "(attribute='role')", "('upper')",
                                                         "(attribute='zz', default='-')"],
    "max": ["", "(attribute='n')"], "min": ["", "(case_sensitive=true)"], "reject": ["", "('none')"],
    "rejectattr": ["('content')", "('n', 'odd')"], "replace": ["('a', 'b')", "('', '.')", "('l', 'L', 1)"],
    "reverse": [""], "round": ["", "(1)", "(0, 'ceil')"], "safe": [""], "select": ["", "('string')"],
    "selectattr": ["('content')", "('role', 'equalto', 'user')"], "sort": ["", "(reverse=true)", "(attribute='n')"],
    "string": [""], "sum": ["", "(attribute='n')", "(start=10)"], "title": [""], "tojson": ["", "(indent=2)", "(sort_keys=true)"],
    "trim": ["", "('H')"], "truncate": ["(5)", "(9, true, '..', 0)"], "unique": ["", "(attribute='role')"],
    "upper": [""], "wordcount": [""],
}

TEST_ARGS = {
    "defined": [""], "undefined": [""], "none": [""], "string": [""], "number": [""], "integer": [""],
    "float": [""], "boolean": [""], "true": [""], "false": [""], "mapping": [""], "callable": [""],
    "iterable": [""], "sequence": [""], "lower": [""], "upper": [""], "even": [""], "odd": [""],
    "divisibleby": [" 2"], "eq": [" 3", "('')"], "equalto": [" none"], "==": [" []"], "ne": [" 3"], "!=": [" {}"],
    "lt": [" 3"], "lessthan": [" 'b'"], "<": [" 0"], "le": [" 3"], "<=": [" []"], "gt": [" 1"],
    "greaterthan": [" ''"], ">": [" 0"], "ge": [" 3"], ">=": [" 'a'"], "in": [" [3, 'a', none]", " 'Hello'"],
    "sameas": [" none", " false"], "filter": [""], "test": [""], "escaped": [""],
}

METHOD_ARGS = {
    "str": {
        "strip": ["()", "('Hd')"], "lstrip": ["()", "(' a')"], "rstrip": ["()", "('d ')"],
        "split": ["()", "(' ')", "('l', 1)"], "rsplit": ["()", "(' ', 1)"], "splitlines": ["()"],
        "startswith": ["('He')", "(('x', ''))"], "endswith": ["('ld')", "(('z',))"],
        "replace": ["('o', '0')", "('', '-')", "('l', 'L', 2)"], "upper": ["()"], "lower": ["()"],
        "title": ["()"], "capitalize": ["()"], "find": ["('o')", "('zz')"], "rfind": ["('o')"],
        "index": ["('l')", "('zz')"], "rindex": ["('l')"], "count": ["('l')", "('')"],
        "join": ["(['a', 'b'])", "([1])", "('xy')"], "format": ["()", "(1, 2)"],
        "isdigit": ["()"], "isalpha": ["()"], "isalnum": ["()"], "isspace": ["()"], "islower": ["()"],
        "isupper": ["()"],
    },
    "dict": {"get": ["('a')", "('zz', 'D')", "('zz')"], "items": ["()"], "keys": ["()"], "values": ["()"],
             "copy": ["()"]},
    "list": {"index": ["(1)", "('zz')"], "count": ["(1)"], "copy": ["()"]},
}
# Methods the immutable sandbox refuses; calling them must fail everywhere.
REFUSED = ["append", "pop", "update", "clear", "setdefault", "sort", "insert", "remove", "extend", "popitem"]

# Filters that return generators, what chains consume them, and the inputs
# chains run over (the edges, and one value of each kind).
CHAIN_INPUTS = ["missing", "n", "none", "es", "el", "ed", "s", "i", "fa", "li", "lm", "ms", "d", "(1, 'a')"]
PRODUCERS = ["map('string')", "map(attribute='role')", "select", "reject", "selectattr('role')", "rejectattr('role')",
             "unique", "sort", "reverse", "batch(2)", "list", "items", "dictsort", "first", "default([])"]
CONSUMERS = ["list", "length", "join(',')", "first", "last", "sum", "min", "max", "tojson", "count", "string",
             "map('string') | list", "select | list"]

# Python prints iterators and bound methods with their address; the
# interpreter prints the same forms without one.
ITERATOR = re.compile(r"<(generator object \w+|\w+ object) at 0x[0-9a-f]+>")
METHOD = re.compile(r"<built-in method (\w+) of (\w+) object at 0x[0-9a-f]+>")


def normalize(text):
    return METHOD.sub(r"<built-in method \1 of \2 object>", ITERATOR.sub("<generator object>", text))


def cases():
    out = []
    for name, variants in sorted(FILTER_ARGS.items()):
        for args in variants:
            for x in INPUTS:
                out.append("{{ %s | %s%s }}" % (x, name, args))
    for name, variants in sorted(TEST_ARGS.items()):
        for args in variants:
            for x in INPUTS:
                out.append("{{ %s is %s%s }}|{{ %s is not %s%s }}" % (x, name, args, x, name, args))
    for kind in sorted(METHOD_ARGS):
        for name, variants in sorted(METHOD_ARGS[kind].items()):
            for args in variants:
                for x in INPUTS:
                    out.append("{{ %s.%s%s }}" % (x, name, args))
    for name in REFUSED:
        for x in ["ls", "d", "[1]", "{'a': 1}"]:
            out.append("{{ %s.%s() }}" % (x, name))
    for p in PRODUCERS:
        for c in CONSUMERS:
            for x in CHAIN_INPUTS:
                out.append("{{ %s | %s | %s }}" % (x, p, c))
    # Loops, conditions and subscripts over the same edges. Subscripts only
    # on variables: jinja2 folds a constant `none[1:]` at compile time through
    # a different path (undefined) than it runs a variable's (an error).
    for x in INPUTS:
        out.append("{%% for v in %s %%}[{{ v }}]{%% else %%}E{%% endfor %%}" % x)
        out.append("{%% if %s %%}T{%% else %%}F{%% endif %%}{{ %s ~ '' }}" % (x, x))
    for x in sorted(CONTEXT) + ["missing"]:
        out.append("{{ %s[0] }}|{{ %s[-1] }}|{{ %s['a'] }}|{{ %s.a }}" % (x, x, x, x))
        out.append("{{ %s[1:] }}" % x)
        out.append("{{ %s[::-1] }}|{{ %s[:'a'] }}" % (x, x))
    return out


def main():
    warnings.simplefilter("ignore")  # Python's SyntaxWarnings about constant expressions such as `0[0]`
    env = jinja2_reference._make_env()
    jinja2_reference._Clock.now = 1767225600
    results = []
    for template in cases():
        case = {"template": template}
        try:
            # A fresh copy each time: some filters mutate their input (indent extends a list).
            case["output"] = normalize(env.from_string(template).render(**copy.deepcopy(CONTEXT)))
            case["ok"] = True
        except Exception as e:  # the C++ side compares only that both fail
            case["ok"] = False
            case["error"] = type(e).__name__ + ": " + str(e)
        results.append(case)
    names = {"filters": sorted(FILTER_ARGS), "tests": sorted(TEST_ARGS),
             "methods": {k: sorted(v) for k, v in METHOD_ARGS.items()}}
    json.dump({"context": CONTEXT, "names": names, "cases": results}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
