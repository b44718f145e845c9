#!/usr/bin/env python3
"""prom_check.py: a strict parser of the Prometheus text exposition format
(version 0.0.4), for `coopctl metrics`.

usage: prom_check.py [--require FAMILY]... [FILE]
       prom_check.py --self-test

Reads FILE, or the standard input without one (or with "-").

Checks: every line is a HELP, TYPE or other comment, or a sample; metric
and label names match the format's grammar; label values use only the
escapes \\\\, \\" and \\n; values are floats (or +Inf, -Inf, NaN); a family
has at most one HELP and one TYPE, the TYPE before its samples, and its
samples together; no series twice; counters end in _total and are >= 0;
histograms have _bucket series with an le label, ascending le ending in
+Inf, non-decreasing counts, and _count equal to the +Inf bucket, and a
_sum, for every label set. Exits 1 with the line and the problem, 2 on
bad usage or a FILE that cannot be read.
"""
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class Bad(Exception):
    pass


def parse_value(s):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s):
        raise Bad("bad value %r" % s)
    return float(s)


def parse_labels(s, i):
    """s[i] is '{'; returns (labels dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        if s[i:i + 1] == "}":
            return labels, i + 1
        m = re.match(r"[a-zA-Z_][a-zA-Z0-9_]*", s[i:])
        if not m:
            raise Bad("bad label name at %r" % s[i:])
        name = m.group(0)
        if name.startswith("__"):
            raise Bad("reserved label name %s" % name)
        i += len(name)
        if s[i:i + 2] != '="':
            raise Bad("label %s: want =\"" % name)
        i += 2
        val = []
        while True:
            if i >= len(s):
                raise Bad("unterminated label value")
            c = s[i]
            if c == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise Bad("bad escape \\%s" % nxt)
                val.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise Bad("newline in label value")
            else:
                val.append(c)
                i += 1
        if name in labels:
            raise Bad("label %s twice" % name)
        labels[name] = "".join(val)
        if s[i:i + 1] == ",":
            i += 1
        elif s[i:i + 1] != "}":
            raise Bad("want , or } after label %s" % name)


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ("histogram", "summary"):
            return base
    return name


def check(text):
    if text and not text.endswith("\n"):
        raise Bad("the last line has no newline")
    helps, types, done, series = set(), {}, set(), set()
    samples = {}  # family -> [(name, labels, value)]
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        try:
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                    if len(parts) < 3 or not NAME.match(parts[2]):
                        raise Bad("%s without a valid metric name" % parts[1])
                    fam = parts[2]
                    if fam in done or (current == fam and fam in samples):
                        raise Bad("%s %s after its samples" % (parts[1], fam))
                    if parts[1] == "HELP":
                        if fam in helps:
                            raise Bad("second HELP for " + fam)
                        helps.add(fam)
                    else:
                        if fam in types:
                            raise Bad("second TYPE for " + fam)
                        if len(parts) != 4 or parts[3] not in TYPES:
                            raise Bad("bad TYPE line")
                        types[fam] = parts[3]
                    if current and current != fam:
                        done.add(current)
                    current = fam
                continue
            if not line.strip():
                raise Bad("empty line")
            m = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
            if not m:
                raise Bad("bad metric name")
            name = m.group(0)
            i = len(name)
            labels = {}
            if line[i:i + 1] == "{":
                labels, i = parse_labels(line, i)
            rest = line[i:].split(" ")
            if rest[0] != "" or len(rest) not in (2, 3):
                raise Bad("want one space, a value and an optional timestamp")
            value = parse_value(rest[1])
            if len(rest) == 3 and not re.fullmatch(r"-?\d+", rest[2]):
                raise Bad("bad timestamp")
            fam = family_of(name, types)
            if fam in done:
                raise Bad("samples of %s are not together" % fam)
            if current and current != fam:
                done.add(current)
            current = fam
            key = (name, tuple(sorted(labels.items())))
            if key in series:
                raise Bad("series twice: %s %s" % key)
            series.add(key)
            samples.setdefault(fam, []).append((name, labels, value))
        except Bad as e:
            raise Bad("line %d: %s: %s" % (n, e, line))
    for fam, typ in types.items():
        got = samples.get(fam, [])
        if typ == "counter":
            if not fam.endswith("_total"):
                raise Bad("counter %s does not end in _total" % fam)
            for name, labels, v in got:
                if not v >= 0:
                    raise Bad("counter %s%s is %r" % (name, labels, v))
        if typ == "histogram":
            check_histogram(fam, got)
    return samples, types


def check_histogram(fam, got):
    groups = {}
    for name, labels, v in got:
        rest = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            if "le" not in labels:
                raise Bad("%s_bucket without le" % fam)
            g["buckets"].append((parse_value(labels["le"]), v))
        elif name == fam + "_sum":
            g["sum"] = v
        elif name == fam + "_count":
            g["count"] = v
        else:
            raise Bad("%s: sample %s in a histogram" % (fam, name))
    if not groups:
        raise Bad("histogram %s has no samples" % fam)
    for rest, g in groups.items():
        b = g["buckets"]
        if not b or b[-1][0] != math.inf:
            raise Bad("%s%s: the last bucket is not le=+Inf" % (fam, rest))
        for (le0, c0), (le1, c1) in zip(b, b[1:]):
            if not le1 > le0:
                raise Bad("%s%s: le not ascending" % (fam, rest))
            if c1 < c0:
                raise Bad("%s%s: bucket counts decrease" % (fam, rest))
        if g["count"] is None or g["sum"] is None:
            raise Bad("%s%s: no _count or _sum" % (fam, rest))
        if g["count"] != b[-1][1]:
            raise Bad("%s%s: _count %r != +Inf bucket %r" % (fam, rest, g["count"], b[-1][1]))


# The checker's own cases: each bad text must be refused, the good accepted.
BAD = [
    "a 1",  # no newline at the end
    "# TYPE a counter\na 1\n",  # counter without _total
    "# TYPE a_total counter\na_total -1\n",
    "# TYPE a gauge\n# TYPE a gauge\na 1\n",
    "# TYPE a gauge\na 1\n# HELP a late\n",
    "1a 1\n",
    "a{1b=\"x\"} 1\n",
    "a{__b=\"x\"} 1\n",
    "a{b=\"\\q\"} 1\n",
    "a{b=\"x\"} one\n",
    "a  1\n",
    "a 1\nb 1\na{c=\"d\"} 2\n",
    "a 1\na 2\n",
    "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",  # no +Inf
    "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
    "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
    "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
    "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
    "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n",
]
GOOD = [
    "",
    "# HELP a_total x\n# TYPE a_total counter\na_total 1\na_total{b=\"c\\\"\\n\"} 2 17\n",
    "# TYPE h histogram\nh_bucket{d=\"0\",le=\"0.1\"} 1\nh_bucket{d=\"0\",le=\"+Inf\"} 3\n"
    "h_sum{d=\"0\"} 1.5e-3\nh_count{d=\"0\"} 3\n# just a comment\ng NaN\n",
]


def self_test():
    for t in BAD:
        try:
            check(t)
        except Bad:
            continue
        print("prom_check: accepted a bad text: %r" % t)
        return 1
    for t in GOOD:
        try:
            check(t)
        except Bad as e:
            print("prom_check: refused a good text: %r: %s" % (t, e))
            return 1
    print("prom_check: self-test: %d bad texts refused, %d good accepted" % (len(BAD), len(GOOD)))
    return 0


USAGE = "usage: prom_check.py [--require FAMILY]... [FILE] | --self-test"


def parse_args(args):
    """(families required, FILE or None); None on bad usage."""
    require, files = [], []
    it = iter(args)
    for a in it:
        if a == "--require":
            fam = next(it, None)
            if fam is None:
                return None
            require.append(fam)
        elif a.startswith("-") and a != "-":
            return None
        else:
            files.append(a)
    if len(files) > 1:
        return None
    return require, (files[0] if files and files[0] != "-" else None)


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    parsed = parse_args(args)
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 2
    require, path = parsed
    try:
        if path is None:
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        print("prom_check: %s: %s" % (path or "stdin", e), file=sys.stderr)
        return 2
    try:
        samples, types = check(text)
        for fam in require:
            if fam not in samples:
                raise Bad("no samples of " + fam)
    except Bad as e:
        print("prom_check: %s" % e)
        return 1
    print("prom_check: %d families, %d samples" % (len(samples), sum(map(len, samples.values()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
