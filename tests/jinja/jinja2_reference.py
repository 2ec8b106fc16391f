#!/usr/bin/env python3
"""Reference renderer for Ladder's Jinja and chat-template tests.

Renders templates with python3-jinja2 set up the way Hugging Face
transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, a json.dumps-based tojson with ensure_ascii=False,
raise_exception, strftime_now) so that the C++ interpreter can be compared
byte for byte.

Input (stdin, JSON):
  {"templates": {"name": "source", ...},
   "cases": [{"id": "...", "template": "name", "context": {variables...},
              "now": seconds since the epoch}]}
Output (stdout, JSON):
  {"results": [{"id": "...", "ok": true, "output": "..."} |
               {"id": "...", "ok": false, "error": "ExceptionType: message"}]}
"""
import datetime
import json
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


class _Clock:
    now = None


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.datetime.fromtimestamp(_Clock.now).strftime(fmt)


def _make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def main():
    request = json.load(sys.stdin)
    env = _make_env()
    compiled = {}
    for name, source in request["templates"].items():
        try:
            compiled[name] = env.from_string(source)
        except Exception as e:  # a template jinja2 cannot compile fails every case
            compiled[name] = e
    results = []
    for case in request["cases"]:
        template = compiled[case["template"]]
        result = {"id": case["id"]}
        try:
            if isinstance(template, Exception):
                raise template
            _Clock.now = case.get("now", 0)
            context = case["context"]
            result["ok"] = True
            result["output"] = template.render(**context)
        except Exception as e:
            result["ok"] = False
            result["error"] = type(e).__name__ + ": " + str(e)
        results.append(result)
    json.dump({"results": results}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
