"""Percentiles of one client run beside the batching mock's own (its --llm-truth log).

    python3 bench/llm-truth.py KIND RESULT TRUTH CASE

KIND names the result's layout: vllm (vllm bench serve's JSON, stampede's or
vLLM's), aiperf (profile_export_aiperf.json), guidellm (benchmarks.json), stampede
(a stampede result). Prints a line per figure: CASE METRIC PCT CLIENT_MS TRUTH_MS.

The truth is the engine's schedule of each completion it finished during the run:
time to first token and end-to-end latency from its arrival, every gap between
tokens (ITL as vLLM and stampede define it, over all gaps), and each request's mean
gap (TPOT as vLLM defines it; AIPerf's and GuideLLM's "inter-token latency" is this
per-request mean too, and is compared with it). Percentiles are interpolated between
ranks, as numpy's are.
"""

import json
import sys

PCTS = (50, 90, 99)


def pct(values, p):
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def truth(path):
    ttft, e2e, itl, tpot = [], [], [], []
    for line in open(path):
        r = json.loads(line)
        ttft.append(r["ttft_ms"])
        e2e.append(r["e2e_ms"])
        itl.extend(r["itl_ms"])
        if r["itl_ms"]:
            tpot.append(sum(r["itl_ms"]) / len(r["itl_ms"]))
    return {"ttft": ttft, "itl": itl, "tpot": tpot, "e2el": e2e}


def client(kind, path):
    """{(metric, p): ms}, the metric named by what it is compared with."""
    d = json.load(open(path))
    out = {}
    if kind == "vllm":
        for m in ("ttft", "tpot", "itl", "e2el"):
            for p in PCTS:
                key = f"p{p}_{m}_ms"
                if key in d:
                    out[(m, p)] = d[key]
    elif kind == "aiperf":
        for m, key in (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency"),
                       ("e2el", "request_latency")):
            for p in PCTS:
                out[(m, p)] = d[key][f"p{p}"]
    elif kind == "guidellm":
        m = d["benchmarks"][0]["metrics"]
        for name, key, scale in (("ttft", "time_to_first_token_ms", 1), ("tpot", "inter_token_latency_ms", 1),
                                 ("e2el", "request_latency", 1000)):
            ps = m[key]["successful"]["percentiles"]
            for p in PCTS:
                out[(name, p)] = ps[f"p{p}"] * scale
    elif kind == "stampede":
        s = d["stream"]
        for name, lat in (("ttft", s["first_event"]), ("itl", s["gap"]), ("tpot", s["tokens"]["tpot"]),
                          ("e2el", d["latency"])):
            for q in lat["percentiles"]:
                if q["p"] in PCTS:
                    out[(name, int(q["p"]))] = q["us"] / 1000
    return out


def main():
    kind, result, truth_path, case = sys.argv[1:5]
    t = truth(truth_path)
    for (m, p), ms in sorted(client(kind, result).items()):
        print(case, m, p, f"{ms:.3f}", f"{pct(t[m], p):.3f}")


main()
