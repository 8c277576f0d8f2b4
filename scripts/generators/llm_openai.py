#!/usr/bin/env python3
"""An evo generator backed by an OpenAI-compatible chat-completions endpoint.

evo evolve --generator 'exec:python3 scripts/generators/llm_openai.py' runs this program once
per generation: the request (task context I1, elites I2, insights I3, recent failures) arrives
as JSON on stdin (schema 2.0, docs/evolve.md: each source once under "sources", where the
run stands under "run", every evaluation of the run under "history"); the program asks the
model for a whole kernel file and prints {"candidates": [{"source", "params", "parent",
"rationale"}]} on stdout. Standard library only.

Environment:
  EVO_LLM_ENDPOINT   base URL, e.g. https://api.openai.com/v1 (required)
  EVO_LLM_MODEL      model name (required)
  EVO_LLM_API_KEY    bearer token (optional for local servers)
  EVO_LLM_TIMEOUT    seconds per HTTP call (default 90)
  EVO_LLM_TEMPERATURE  sampling temperature (default 0.7)

Exit status: 0 with a JSON answer (possibly no candidates, with "notes" saying why);
1 when the endpoint cannot be used (the message on stderr names the variable or the HTTP error).
"""
import json
import os
import re
import sys
import urllib.error
import urllib.request

SYSTEM = (
    "You write CUDA attention kernels for the evo harness. Answer with exactly one complete .cu file "
    "in a ```cuda code block: the /*evo {json} */ front matter first, then the kernel that exports "
    "extern \"C\" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p) and "
    "EVO_EXPORT_LAUNCH(...). Include only evo_attn.cuh and CUDA toolkit headers. A kernel that is "
    "wrong, reads or writes out of bounds, or does not do the work is rejected. Before the code "
    "block, one line 'Parent: <candidate id>', one line 'Rationale: <why it should be faster>' and, "
    "to run it with tunables other than its front matter's first values (an elite runs with its "
    "listed params), one line 'Params: {\"NAME\": integer, ...}'."
)

CODE_BLOCK = re.compile(r"```(?:cuda|cu|c\+\+|cpp|c)?[ \t]*\n(.*?)```", re.S)


def params_text(params):
    return " ".join(f"{k}={v}" for k, v in (params or {}).items()) or "(defaults)"


def source_block(req, entry):
    text = req.get("sources", {}).get(entry.get("source_sha256", ""), "")
    return "```cuda\n" + text + "\n```" if text else "(source not available)"


def render_run(req):
    run = req.get("run")
    if not run:
        return []
    out = [f"## This run: {run.get('id')}, generation {run.get('generation')}, "
           f"{run.get('wanted')} candidate(s) wanted, {run.get('generations_left')} generation(s) left, "
           f"GPU-s left: {run.get('gpu_s_left')}"]
    for h in req.get("history", []):
        fit = h.get("fitness_us")
        out.append(f"- gen {h.get('generation')} {h.get('variant')} {params_text(h.get('params'))}: "
                   f"{h.get('outcome')}" + (f" {fit:.2f} us" if isinstance(fit, (int, float)) else ""))
    return ["\n".join(out)]


def render(req):
    """The request as the user message: task, run, elites (or variants) with sources, insights, failures."""
    i1 = req.get("i1", {})
    out = [f"# Task {req.get('task')} stage {req.get('stage', {}).get('number')} "
           f"({req.get('stage', {}).get('title', '')})", i1.get("semantics", ""),
           f"GPU: {i1.get('gpu')}. Fitness: {i1.get('fitness')}.",
           "Gate shapes: " + ", ".join(i1.get("shapes", {}).get("gate", [])),
           "Benchmark shapes: " + ", ".join(i1.get("shapes", {}).get("benchmark", [])),
           "Resource caps: " + json.dumps(i1.get("resource_caps", {})),
           "## ABI header evo_attn.cuh\n```cuda\n" + i1.get("abi_header", "") + "\n```"]
    out += render_run(req)
    for e in req.get("i2", {}).get("elites", []):
        fit = (e.get("fitness") or {}).get("geomean_median_us")
        out.append(f"## Elite {e.get('candidate_id')} {e.get('variant')} Params: {json.dumps(e.get('params') or {})}: "
                   f"{fit} us (lineage {' <- '.join(e.get('lineage', []))})\n" + source_block(req, e))
    for v in req.get("i2", {}).get("variants", []):
        out.append(f"## Stage variant {v.get('variant')} (tunables {json.dumps(v.get('tunables', {}))})\n"
                   + source_block(req, v))
    i3 = req.get("i3")
    if i3:
        out.append("## Insights")
        out += [f"- {k}: {v}" for k, v in i3.get("stage_notes", {}).items() if isinstance(v, str)]
        out += [f"- measured {d.get('parent')} -> {d.get('child')}: {d.get('change')}" for d in i3.get("deltas", [])]
    fails = req.get("failures", [])
    if fails:
        out.append("## Recent failures: fix these")
        for f in fails:
            out.append(f"- {f.get('variant', '')} {f.get('outcome')}: {f.get('reason', '')}")
            if f.get("compile_log"):
                out.append("```\n" + f["compile_log"] + "\n```")
            if f.get("failing_case"):
                out.append("  failing case: " + json.dumps(f["failing_case"]))
    return "\n\n".join(out)


def ask(endpoint, model, key, messages, timeout, temperature):
    body = json.dumps({"model": model, "messages": messages, "temperature": temperature}).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(endpoint.rstrip("/") + "/chat/completions", data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8", "replace"))


def answer(reply_text, req):
    """The candidates JSON for one model reply."""
    m = CODE_BLOCK.search(reply_text or "")
    if not m:
        return {"candidates": [], "notes": "the model's reply had no ```cuda code block: " + (reply_text or "")[:200]}
    parent = re.search(r"^Parent:\s*(\S+)", reply_text, re.M)
    if parent and parent.group(1).lower() in ("none", "null", "-"):
        parent = None
    why = re.search(r"^Rationale:\s*(.+)$", reply_text, re.M)
    elites = req.get("i2", {}).get("elites", [])
    cand = {
        "source": m.group(1),
        "parent": parent.group(1) if parent else (elites[0]["candidate_id"] if elites else ""),
        "rationale": why.group(1).strip() if why else "",
    }
    params = re.search(r"^Params:\s*(\{.*\})\s*$", reply_text, re.M)
    if params:
        try:
            cand["params"] = json.loads(params.group(1))
        except json.JSONDecodeError:
            pass  # evo runs the front matter's first values; the rationale says what was meant
    return {"candidates": [cand]}


def main():
    endpoint, model = os.environ.get("EVO_LLM_ENDPOINT"), os.environ.get("EVO_LLM_MODEL")
    if not endpoint or not model:
        print("llm_openai.py: set EVO_LLM_ENDPOINT (e.g. https://api.openai.com/v1) and EVO_LLM_MODEL", file=sys.stderr)
        return 1
    try:
        req = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"llm_openai.py: the request on stdin is not JSON ({e})", file=sys.stderr)
        return 1
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": render(req)}]
    try:
        reply = ask(endpoint, model, os.environ.get("EVO_LLM_API_KEY", ""), messages,
                    float(os.environ.get("EVO_LLM_TIMEOUT", "90")), float(os.environ.get("EVO_LLM_TEMPERATURE", "0.7")))
        text = reply["choices"][0]["message"]["content"]
    except (urllib.error.URLError, OSError) as e:
        print(f"llm_openai.py: {endpoint}: {e}", file=sys.stderr)
        return 1
    except (KeyError, IndexError, TypeError, ValueError) as e:
        json.dump({"candidates": [], "notes": f"the endpoint's answer is not a chat completion ({e!r})"}, sys.stdout)
        return 0
    json.dump(answer(text, req), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
