"""Prompt files in driftscope's format (docs/cli.md "Prompt files", src/experiment/prompts.cpp): one
prompt per line, or JSONL lines {"text": "..."} / {"ids": [1, 2, 3]}, never both, and
{"ids": [...], "forced": [...]} for teacher forcing (the lines `driftscope zoom` writes); blank
lines skipped; a leading UTF-8 byte order mark skipped. The same rules and refusals as
driftscope's reader, and its bounds (src/model/text_file.cpp, read_text_file): a file of at most
64 MiB, of text (a NUL byte anywhere refuses it, named by its byte offset in the file), holding at
most 100,000 prompts."""

import json
import os

INT32_MAX = 2**31 - 1
MAX_PROMPTS_FILE_BYTES = 64 << 20  # kMaxPromptsFileBytes (src/model/text_file.h)
MAX_PROMPTS = 100_000  # kMaxPrompts (src/experiment/prompts.h)
_FILE_HINT = "--prompts takes a text file with one prompt per line, or JSONL"
_JSONL_HINT = 'each JSONL line is {"text": "..."} or {"ids": [1, 2, 3]}'


class PromptError(ValueError):
    pass


def read_prompts_file(path, encode):
    """[(text or None, ids, forced continuation or None)]; encode(text) -> ids, or None when no
    tokenizer is available."""
    lines = read_prompts_text(path).split("\n")
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
        if len(out) == MAX_PROMPTS:
            raise PromptError(
                "prompts file '%s' holds more than %d prompts (line %d): split the prompts "
                "into several files and runs" % (path, MAX_PROMPTS, n)
            )
        out.append((text, ids, forced))
    if not out:
        raise PromptError("prompts file '%s' holds no prompt" % path)
    return out


def read_prompts_text(path):
    """The text of a prompts file, its byte order mark dropped, read as driftscope reads it: at most
    64 MiB (a pipe is read up to one byte past the limit), refused when it holds a NUL byte (the
    offset counts bytes from the file's start, the mark included) or is not UTF-8. Needs no
    tokenizer: the recorders call it before they load a model, so a bad file is refused at once."""
    name = "prompts file '%s'" % path
    if os.path.isdir(path):
        raise PromptError("%s is a directory: %s" % (name, _FILE_HINT))
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PROMPTS_FILE_BYTES + 1)
    except OSError as e:
        raise PromptError("cannot read %s: %s: %s" % (name, e.strerror, _FILE_HINT))
    if len(data) > MAX_PROMPTS_FILE_BYTES:
        raise PromptError(
            "%s is larger than the limit of %.1f MiB: %s" % (name, MAX_PROMPTS_FILE_BYTES / 2**20, _FILE_HINT)
        )
    nul = data.find(b"\0")
    if nul >= 0:
        raise PromptError("%s is not a text file (a NUL byte at offset %d): %s" % (name, nul, _FILE_HINT))
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # marks the encoding; it is no prompt text
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise PromptError(
            "%s is not UTF-8 text (byte 0x%02x at offset %d): %s"
            % (name, data[bom + e.start], bom + e.start, _FILE_HINT)
        )


def _parse_line(line, where):
    try:
        j = json.loads(line)
    except json.JSONDecodeError as e:
        raise PromptError("%s: not valid JSON (%s); %s" % (where, e, _JSONL_HINT))
    if not isinstance(j, dict):
        raise PromptError('%s: needs a "text" string or an "ids" list' % where)
    return j


def _jsonl_prompt(j, where, encode):
    """(text or None, ids, forced or None) of one JSONL object: {"text"} encoded, {"ids"} as given,
    never both; {"ids", "forced"} also sets the forced continuation (teacher forcing)."""
    if "ids" in j and "text" in j:
        raise PromptError('%s: give "text" or "ids", not both' % where)
    forced = None
    if "forced" in j:  # as driftscope run's: only with "ids", a list of ids
        if not isinstance(j["forced"], list) or "ids" not in j:
            raise PromptError(
                '%s: "forced" goes with "ids" and is a list of ids, e.g. {"ids": [1, 403], "forced": [407, 9]}' % where
            )
        forced = _token_ids(j, "forced", where)
    if isinstance(j.get("ids"), list):
        return None, _token_ids(j, "ids", where), forced
    if isinstance(j.get("text"), str):
        return j["text"], _encode(encode, j["text"], where), forced
    raise PromptError('%s: needs a "text" string or an "ids" list; %s' % (where, _JSONL_HINT))


def _token_ids(j, key, where):
    """j[key]: whole numbers in [0, 2^31 - 1] (not 1.0, not "1", not true), as driftscope reads them."""
    for v in j[key]:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT32_MAX:
            raise PromptError(
                '%s: "%s" holds %s, not a token id; token ids are whole numbers >= 0, '
                'e.g. {"ids": [1, 403, 407]}' % (where, key, json.dumps(v))
            )
    return list(j[key])


def _encode(encode, text, where):
    if encode is None:
        raise PromptError(
            '%s: a text prompt needs a tokenizer (pass --tokenizer, or give prompts as {"ids": [...]})' % where
        )
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
