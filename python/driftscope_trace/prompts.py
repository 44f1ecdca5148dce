"""Prompt files in driftscope's format (docs/cli.md "Prompt files", src/experiment/prompts.cpp): one
prompt per line, or JSONL lines {"text": "..."} / {"ids": [1, 2, 3]}, never both, and
{"ids": [...], "forced": [...]} for teacher forcing (the lines `driftscope zoom` writes); blank
lines skipped; a leading UTF-8 byte order mark skipped. The same rules and refusals as
driftscope's reader."""
import json

INT32_MAX = 2**31 - 1
_JSONL_HINT = "each JSONL line is {\"text\": \"...\"} or {\"ids\": [1, 2, 3]}"


class PromptError(ValueError):
    pass


def read_prompts_file(path, encode):
    """[(text or None, ids, forced continuation or None)]; encode(text) -> ids, or None when no
    tokenizer is available."""
    try:
        with open(path, encoding="utf-8-sig") as f:  # -sig: skips a leading byte order mark
            lines = f.read().split("\n")
    except OSError as e:
        raise PromptError("cannot read prompts file '%s' (%s): --prompts takes a text file with one "
                          "prompt per line, or JSONL" % (path, e.strerror))
    out = []
    for n, line in enumerate(lines, 1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip(" \t"):
            continue
        where = "%s:%d" % (path, n)
        if line.startswith("{"):
            text, ids, forced = _jsonl_prompt(_parse_line(line, where), where, encode)
        else:
            text, ids, forced = line, _encode(encode, line, where), None
        if not ids:
            raise PromptError("%s: the prompt has no tokens" % where)
        out.append((text, ids, forced))
    if not out:
        raise PromptError("prompts file '%s' holds no prompt" % path)
    return out


def _parse_line(line, where):
    try:
        j = json.loads(line)
    except json.JSONDecodeError as e:
        raise PromptError("%s: not valid JSON (%s); %s" % (where, e, _JSONL_HINT))
    if not isinstance(j, dict):
        raise PromptError("%s: needs a \"text\" string or an \"ids\" list" % where)
    return j


def _jsonl_prompt(j, where, encode):
    """(text or None, ids, forced or None) of one JSONL object: {"text"} encoded, {"ids"} as given,
    never both; {"ids", "forced"} also sets the forced continuation (teacher forcing)."""
    if "ids" in j and "text" in j:
        raise PromptError("%s: give \"text\" or \"ids\", not both" % where)
    forced = None
    if "forced" in j:  # as driftscope run's: only with "ids", a list of ids
        if not isinstance(j["forced"], list) or "ids" not in j:
            raise PromptError("%s: \"forced\" goes with \"ids\" and is a list of ids, e.g. "
                              "{\"ids\": [1, 403], \"forced\": [407, 9]}" % where)
        forced = _token_ids(j, "forced", where)
    if isinstance(j.get("ids"), list):
        return None, _token_ids(j, "ids", where), forced
    if isinstance(j.get("text"), str):
        return j["text"], _encode(encode, j["text"], where), forced
    raise PromptError("%s: needs a \"text\" string or an \"ids\" list; %s" % (where, _JSONL_HINT))


def _token_ids(j, key, where):
    """j[key]: whole numbers in [0, 2^31 - 1] (not 1.0, not "1", not true), as driftscope reads them."""
    for v in j[key]:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT32_MAX:
            raise PromptError("%s: \"%s\" holds %s, not a token id; token ids are whole numbers >= 0, "
                              "e.g. {\"ids\": [1, 403, 407]}" % (where, key, json.dumps(v)))
    return list(j[key])


def _encode(encode, text, where):
    if encode is None:
        raise PromptError("%s: a text prompt needs a tokenizer (pass --tokenizer, or give prompts as "
                          "{\"ids\": [...]})" % where)
    return list(encode(text))


def parse_ids(spec):
    """--prompt-ids 1,403,407 -> [1, 403, 407]."""
    try:
        ids = [int(x) for x in spec.replace(" ", ",").split(",") if x]
    except ValueError:
        raise PromptError("--prompt-ids '%s' is not a comma-separated list of integers" % spec)
    if not ids:
        raise PromptError("--prompt-ids is empty")
    return ids
