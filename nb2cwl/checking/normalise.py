"""What varies by nature between two runs of the same notebook, and nothing else.

`nb2cwl check` compares outputs after replacing exactly these:

- memory addresses in reprs (`0x7f3a...`) by `0xADDR`;
- the times `%time`/`%%time` print (`CPU times: ...`, `Wall time: ...`) and `%timeit`'s
  summary line (`... per loop (mean ± std. dev. of ...)`);
- the kernel's process id in the file names IPython gives cells
  (`/tmp/ipykernel_4242/1037361036.py`), which warnings and tracebacks show;
- progress bars that rewrite their line with `\\r` (tqdm and the like): only what the line
  shows last is kept, and the times and rate in its brackets (`[00:02<00:00, 41.2it/s]`; a
  postfix after them, `loss=0.31`, is compared);
- the times Keras' progress lines print (`2/2 ━━━━ 0s 12ms/step`), and the date matplotlib
  writes into an SVG (`<dc:date>`), with the ids it derives from a random salt per process
  (`<path id="m49509f6386"`, `#m49509f6386`, `url(#p1f2e3d4c5b)`);
- the time and process id that C++ libraries' log lines start with (absl and glog's
  `I0000 00:00:1764102000.123456   4242 port.cc:153] ...`: TensorFlow's when it starts).

Numbers are compared exactly unless a tolerance is asked for (`--rtol`).
"""

from __future__ import annotations

import re

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+")
_RULES = [
    (re.compile(r"CPU times: [^\n]*"), "CPU times: <time>"),
    (re.compile(r"Wall time: [^\n]*"), "Wall time: <time>"),
    (re.compile(r"[\d.]+ [^\s]+ (± [\d.]+ [^\s]+ )?per loop \([^)]*\)"), "<timeit>"),
    (re.compile(r"(?:/[^\s/:'\"]+)*/ipykernel_\d+/"), "<tmp>/ipykernel_PID/"),
    (re.compile(r"\[\d+(?::\d\d)+<(?:\d+(?::\d\d)+|\?), [^,\]\n]*(?=[,\]])"), "[<time>"),
    (re.compile(r"(?:\d+s )?\d+(?:\.\d+)?[mu]?s/(?:step|sample)"), "<time>/step"),
    (re.compile(r"<dc:date>[^<]*</dc:date>"), "<dc:date>DATE</dc:date>"),
    (re.compile(r"(id=\"|#)([mp])[0-9a-f]{10}(?=[\")])"), r"\1\2SALTED"),
    (re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ ", re.MULTILINE),
     r"\1MMDD <time> <pid> "),
]


def normalised(text: str) -> str:
    """`text` with what varies by nature replaced (see the module docstring)."""
    text = _ADDRESS.sub("0xADDR", _last_rewrite(text))
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def _last_rewrite(text: str) -> str:
    r"""Each line as a terminal last shows it: a progress bar's `\r` rewrites its line."""
    if "\r" not in text:
        return text
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))
