#!/usr/bin/env python3
"""Validates JSON texts against JSON schemas with python3-jsonschema, as an
independent judge for the grammar tests.

stdin:  line 1 a JSON array of schemas; then one JSON object per line,
        {"schema": INDEX, "text": TEXT}.
stdout: one line per case: "valid", "invalid" or "unparsable".
Formats are checked (date, email, uuid, ipv4 by jsonschema; date-time and
time here, as RFC 3339 with real calendar dates, since Debian lacks the
package jsonschema uses for them); NaN and Infinity are not JSON."""
import datetime
import json
import re
import sys

import jsonschema


def reject_constant(name):
    raise ValueError("not JSON: " + name)


_TIME = r"\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"


def rfc3339_checker(pattern, parse):
    """A format check: the RFC 3339 shape, and a real date and time."""

    def check(text):
        if not isinstance(text, str):
            return True
        if not re.fullmatch(pattern, text):
            return False
        try:
            parse(text.replace("Z", "+00:00"))
        except ValueError:
            return False
        return True

    return check


is_date_time = rfc3339_checker(r"\d{4}-\d{2}-\d{2}T" + _TIME, datetime.datetime.fromisoformat)
is_time = rfc3339_checker(_TIME, datetime.time.fromisoformat)


def main():
    lines = sys.stdin.read().split("\n")
    validators = []
    for schema in json.loads(lines[0]):
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        checker = jsonschema.FormatChecker()
        checker.checks("date-time")(is_date_time)
        checker.checks("time")(is_time)
        validators.append(cls(schema, format_checker=checker))
    out = []
    for line in lines[1:]:
        if not line:
            continue
        case = json.loads(line)
        try:
            value = json.loads(case["text"], parse_constant=reject_constant)
        except ValueError:
            out.append("unparsable")
            continue
        out.append("valid" if validators[case["schema"]].is_valid(value) else "invalid")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
