"""Prompt files in driftscope's format (docs/cli.md "Prompt files", src/experiment/prompts.cpp): one
prompt per line, or JSONL lines {"text": "..."} / {"ids": [1, 2, 3]}, never both; blank lines
skipped; a leading UTF-8 byte order mark skipped."""
import json


class PromptError(ValueError):
    pass


def read_prompts_file(path, encode):
    """[(text or None, ids)]; encode(text) -> ids, or None when no tokenizer is available."""
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
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                raise PromptError("%s: not valid JSON (%s); each JSONL line is {\"text\": \"...\"} or "
                                  "{\"ids\": [1, 2, 3]}" % (where, e))
            if isinstance(j, dict) and "ids" in j and "text" in j:
                raise PromptError("%s: give \"text\" or \"ids\", not both" % where)
            if isinstance(j.get("ids"), list):
                if not all(isinstance(v, int) and not isinstance(v, bool) for v in j["ids"]):
                    raise PromptError("%s: \"ids\" must hold integers" % where)
                text, ids = None, list(j["ids"])
            elif isinstance(j.get("text"), str):
                text, ids = j["text"], _encode(encode, j["text"], where)
            else:
                raise PromptError("%s: needs a \"text\" string or an \"ids\" list" % where)
        else:
            text, ids = line, _encode(encode, line, where)
        if not ids:
            raise PromptError("%s: the prompt has no tokens" % where)
        out.append((text, ids))
    if not out:
        raise PromptError("prompts file '%s' holds no prompt" % path)
    return out


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
