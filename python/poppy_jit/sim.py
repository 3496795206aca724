"""A simulated LLM service speaking the OpenAI chat-completions protocol.

`SimServer(responder, latency)` serves `POST /v1/chat/completions` (with `n` choices, and
`stream=True` as server-sent events, one chunk per token), `POST /v1/embeddings` (deterministic
unit vectors) and `GET /v1/models` on 127.0.0.1 with an OS-chosen port, answering every request
concurrently on its own thread.  Answers are scripted by a *responder* `(messages, model, params)
-> text`, so they are deterministic; the delay before answering follows a `LatencyModel` (time to
first token + time per output token, an optional jitter that is a deterministic function of the
request, and a global `time_scale`).  Every request is logged (`SimServer.requests`) with its
start/end time, latency and status; `SimServer.max_concurrent` is the most requests in service
at once.  `Fault`s inject 429/500 answers or timeouts on a deterministic schedule.

    with SimServer(city_excursions, LatencyModel(ttft=0.3, per_token=0.005)) as sim:
        client = openai.AsyncOpenAI(base_url=sim.base_url, api_key="sim")

Command line: `python -m poppy_jit.sim --port 8000 --app city_excursions`.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

Responder = Callable[[list, str, dict], str]

__all__ = ["SimServer", "LatencyModel", "RequestRecord", "Fault", "city_excursions", "echo",
           "APPS", "count_tokens", "embedding"]


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()


def count_tokens(text: str) -> int:
    """The simulator's token count: whitespace-separated words (deterministic and cheap)."""
    return len(text.split())


def _last_user_message(messages: list) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "user":
            content = msg.get("content", "")
            if isinstance(content, list):  # content parts: keep the text ones
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


@dataclass(frozen=True)
class LatencyModel:
    """latency = (ttft + per_token * output_tokens) * (1 ± jitter) * time_scale, in seconds.

    The jitter factor is drawn uniformly from [1 - jitter, 1 + jitter] by hashing the seed, the
    model and the messages, so the same request always gets the same latency.
    """

    ttft: float = 0.2
    per_token: float = 0.005
    jitter: float = 0.0
    seed: int = 0
    time_scale: float = 1.0

    def latency(self, messages: list, model: str, text: str) -> float:
        base = self.ttft + self.per_token * count_tokens(text)
        u = int.from_bytes(_digest(self.seed, model, messages)[:8], "big") / 2**64
        return max(0.0, base * (1 + self.jitter * (2 * u - 1)) * self.time_scale)


@dataclass
class RequestRecord:
    """One request (times are `time.perf_counter()` seconds)."""

    id: str
    model: str
    prompt: str  # the last user message (embeddings: the inputs joined by newlines)
    messages: list
    response: str
    planned_latency: float  # what the latency model asked for
    start: float  # request body received
    end: float = 0.0  # response ready to write
    params: dict = field(default_factory=dict)
    status: int = 200  # HTTP status answered (a timeout fault: 0, no answer before the hang)
    endpoint: str = "chat"  # "chat", "embeddings"
    concurrent: int = 1  # requests in service (this one included) when it arrived

    @property
    def latency(self) -> float:
        """Latency as served: from receiving the request to finishing the response."""
        return self.end - self.start


@dataclass
class Fault:
    """Injected failure: answer `status` (429 or 5xx; 0 = hang for `hang` seconds, a timeout for
    the client) instead of serving.  Applies to requests whose prompt contains `match` (every
    request if None): the first `first` of them, then (if `every` > 0) every `every`-th one.
    Counting is per fault and in arrival order, so a sequential client sees a fixed schedule."""

    status: int = 429
    match: str | None = None
    first: int = 1
    every: int = 0
    retry_after: float | None = None  # seconds, sent as Retry-After
    hang: float = 5.0
    retry_after_ms: float | None = None  # sent as retry-after-ms (the SDK prefers it)
    should_retry: bool | None = None  # sent as x-should-retry: true/false
    seen: int = field(default=0, compare=False)

    def hits(self, prompt: str) -> bool:
        """Count this request and say whether it fails (call with the server lock held)."""
        if self.match is not None and self.match not in prompt:
            return False
        self.seen += 1
        return self.seen <= self.first or (self.every > 0 and
                                           (self.seen - self.first) % self.every == 0)


def embedding(text: str, dim: int = 8) -> list:
    """A deterministic unit vector for `text` (the simulator's embedding model)."""
    h = _digest("embed", text, dim)
    while len(h) < 2 * dim:
        h += _digest("embed-more", h)
    raw = [int.from_bytes(h[2 * i:2 * i + 2], "big") / 32768 - 1 for i in range(dim)]
    norm = sum(x * x for x in raw) ** 0.5 or 1.0
    return [x / norm for x in raw]


# ---------------------------------------------------------------------------------------------
# Responders

def echo(messages: list, model: str, params: dict) -> str:
    """Echo the last user message, tagged with a short hash of the whole conversation."""
    return f"echo[{_digest(model, messages).hex()[:8]}]: {_last_user_message(messages)}"


_REGIONS = {
    "oceania": ["Sydney", "Melbourne", "Auckland", "Brisbane", "Perth", "Wellington", "Adelaide",
                "Suva"],
    "europe": ["Lisbon", "Vienna", "Kraków", "Edinburgh", "Seville", "Bruges", "Ljubljana",
               "Tallinn"],
    "south america": ["Cusco", "Valparaíso", "Cartagena", "Montevideo", "Salvador", "Mendoza",
                      "Quito", "La Paz"],
}
_SYLLABLES = ["ka", "lo", "mi", "ra", "ten", "vor", "su", "an", "del", "po", "ri", "zen"]
_SIGHTS = ["the old harbour", "a hilltop monastery", "the covered market", "a limestone gorge",
           "the botanical gardens", "a tidal island", "the river promenade", "a lava field",
           "the cathedral quarter", "an abandoned railway tunnel", "a salt lagoon",
           "the night food stalls"]
_ACTIVITIES = ["kayaking at dawn", "a guided street-art walk", "a vineyard cycling tour",
               "snorkelling over the reef", "a cooking class with local chefs",
               "sunset sailing", "a day hike along the ridge", "a ferry ride between islands",
               "stargazing far from the lights", "a tram tour of the historic centre"]


def _pick(seq: list, h: bytes, i: int) -> str:
    return seq[h[i] % len(seq)]


def _cities(region: str) -> list:
    known = _REGIONS.get(region.strip().lower())
    if known:
        return known
    names = []
    for i in range(8):
        h = _digest("city", region, i)
        names.append("".join(_pick(_SYLLABLES, h, j) for j in range(2 + h[9] % 2)).capitalize())
    return names


def _distinct(seq: list, h: bytes, k: int) -> list:
    """k distinct items of seq chosen by the bytes of h."""
    pool = list(seq)
    return [pool.pop(h[i] % len(pool)) for i in range(k)]


def _excursions(city: str) -> str:
    h = _digest("excursions", city)
    s1, s2, s3 = _distinct(_SIGHTS, h, 3)
    a1, a2, a3 = _distinct(_ACTIVITIES, h[3:], 3)
    return (f"In {city}, start the morning at {s1} before the crowds arrive, then try {a1}. "
            f"After lunch, head out to {s2} and finish the day with {a2}. Locals recommend "
            f"visiting {s3} on a weekday, when it is quiet, and booking {a3} a few days ahead.")


_CITIES_RE = re.compile(r"cities in (.+?)\s*$", re.IGNORECASE | re.DOTALL)
_EXCURSIONS_RE = re.compile(r"excursions in (.+?)\s*$", re.IGNORECASE | re.DOTALL)


def city_excursions(messages: list, model: str, params: dict) -> str:
    """CityExcursions (OPAL §2): 'List cities in R' → 8 cities, one per line (no trailing
    newline); 'Excursions in C' → a paragraph about C.  Anything else is echoed."""
    prompt = _last_user_message(messages)
    m = _CITIES_RE.search(prompt)
    if m:
        return "\n".join(_cities(m.group(1)))
    m = _EXCURSIONS_RE.search(prompt)
    if m:
        return _excursions(m.group(1))
    return echo(messages, model, params)


APPS: dict = {"city_excursions": city_excursions, "echo": echo}


# ---------------------------------------------------------------------------------------------
# Server

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so the SDK's connection pool is reused
    # Headers and body go out in two writes; without TCP_NODELAY, Nagle + delayed ACK add ~40 ms.
    disable_nagle_algorithm = True
    server: "_Server"

    def log_message(self, format: str, *args: object) -> None:  # silence per-request logging
        pass

    def _send_json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error",
                                           "param": None, "code": None}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": "sim-1", "object": "model", "created": 0, "owned_by": "poppy-sim"}]})
        else:
            self._error(404, f"no route for GET {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        start = time.perf_counter()
        route = self.path.rstrip("/")
        endpoint = {"/v1/chat/completions": "chat", "/chat/completions": "chat",
                    "/v1/embeddings": "embeddings", "/embeddings": "embeddings"}.get(route)
        if endpoint is None:
            self._error(404, f"no route for POST {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
            if endpoint == "chat":
                messages = body["messages"]
                prompt = _last_user_message(messages)
            else:
                inputs = body["input"]
                inputs = [inputs] if isinstance(inputs, str) else list(inputs)
                messages, prompt = [], "\n".join(map(str, inputs))
            model = body.get("model", "sim-1")
        except (ValueError, KeyError, TypeError) as exc:
            self._error(400, f"bad request body: {exc}")
            return
        sim = self.server.sim
        with sim.serving(prompt) as (concurrent, fault):
            params = {k: v for k, v in body.items() if k not in ("messages", "model", "input")}
            rec = RequestRecord(id=f"chatcmpl-{uuid.uuid4().hex[:24]}", model=model,
                                prompt=prompt, messages=messages, response="",
                                planned_latency=0.0, start=start, params=params,
                                endpoint=endpoint, concurrent=concurrent)
            if fault is not None:
                self._inject(sim, rec, fault)
            elif endpoint == "embeddings":
                self._embeddings(sim, rec, inputs, body)
            else:
                self._chat(sim, rec, body)

    def _inject(self, sim: "SimServer", rec: RequestRecord, fault: Fault) -> None:
        rec.status = fault.status
        if fault.status == 0:  # a timeout: hold the request, then drop the connection
            time.sleep(fault.hang)
            rec.end = time.perf_counter()
            sim._log(rec)
            self.close_connection = True
            return
        rec.end = time.perf_counter()
        sim._log(rec)
        body = {"error": {"message": f"injected {fault.status}", "type": "sim_fault",
                          "param": None, "code": None}}
        data = json.dumps(body).encode()
        self.send_response(fault.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if fault.retry_after is not None:
            self.send_header("Retry-After", str(fault.retry_after))
        if fault.retry_after_ms is not None:
            self.send_header("retry-after-ms", str(fault.retry_after_ms))
        if fault.should_retry is not None:
            self.send_header("x-should-retry", "true" if fault.should_retry else "false")
        self.end_headers()
        self.wfile.write(data)

    def _embeddings(self, sim: "SimServer", rec: RequestRecord, inputs: list, body: dict) -> None:
        dim = int(body.get("dimensions") or 8)
        rec.planned_latency = sim.latency.latency([], rec.model, "")
        time.sleep(max(0.0, rec.start + rec.planned_latency - time.perf_counter()))
        tokens = sum(count_tokens(str(t)) for t in inputs)
        rec.end = time.perf_counter()
        sim._log(rec)
        self._send_json(200, {
            "object": "list", "model": rec.model,
            "data": [{"object": "embedding", "index": i, "embedding": embedding(str(t), dim)}
                     for i, t in enumerate(inputs)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })

    def _chat(self, sim: "SimServer", rec: RequestRecord, body: dict) -> None:
        n = int(body.get("n") or 1)
        texts = []
        for i in range(n):  # choice i > 0 sees its index, so alternatives differ
            params = rec.params if i == 0 else dict(rec.params, choice_index=i)
            text = sim.responder(rec.messages, rec.model, params)
            texts.append(text if i == 0 or text != texts[0] else f"{text} (alt {i})")
        rec.response = texts[0]
        rec.planned_latency = sim.latency.latency(rec.messages, rec.model, texts[0])
        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) for m in rec.messages)
        completion_tokens = sum(count_tokens(t) for t in texts)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        if body.get("stream"):
            self._stream(sim, rec, texts[0], usage)
            return
        time.sleep(max(0.0, rec.start + rec.planned_latency - time.perf_counter()))
        # Log before writing, so a client that has its answer always finds the record.
        rec.end = time.perf_counter()
        sim._log(rec)
        self._send_json(200, {
            "id": rec.id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": rec.model,
            "system_fingerprint": "poppy-sim",
            "choices": [{"index": i, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": t}}
                        for i, t in enumerate(texts)],
            "usage": usage,
        })

    def _stream(self, sim: "SimServer", rec: RequestRecord, text: str, usage: dict) -> None:
        """Server-sent events: the first token after the time to first token, then one chunk per
        token at the per-token pace (both scaled like the non-streaming latency)."""
        lat = sim.latency
        words = re.findall(r"\S+\s*|\s+", text) or [""]
        per_token = (rec.planned_latency - lat.ttft * lat.time_scale) / max(1, len(words))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(payload: str) -> None:
            data = f"data: {payload}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def chunk(delta: dict, finish: str | None) -> str:
            return json.dumps({"id": rec.id, "object": "chat.completion.chunk",
                               "created": int(time.time()), "model": rec.model,
                               "system_fingerprint": "poppy-sim",
                               "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                            "finish_reason": finish}]})

        time.sleep(max(0.0, rec.start + lat.ttft * lat.time_scale - time.perf_counter()))
        event(chunk({"role": "assistant", "content": ""}, None))
        for i, w in enumerate(words):
            time.sleep(max(0.0, rec.start + lat.ttft * lat.time_scale + per_token * (i + 1)
                           - time.perf_counter()))
            event(chunk({"content": w}, None))
        rec.end = time.perf_counter()
        sim._log(rec)
        event(chunk({}, "stop"))
        event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent connects from a parallel client

    def __init__(self, addr: tuple, sim: "SimServer") -> None:
        self.sim = sim
        super().__init__(addr, _Handler)


class SimServer:
    """An in-process simulated LLM service (see module docstring)."""

    def __init__(self, responder: Responder = echo, latency: LatencyModel | None = None,
                 host: str = "127.0.0.1", port: int = 0, faults: list | None = None) -> None:
        self.responder = responder
        self.latency = latency or LatencyModel()
        self.faults: list = list(faults or [])
        self._addr = (host, port)
        self._lock = threading.Lock()
        self._records: list = []
        self._in_service = 0
        self._max_concurrent = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def serving(self, prompt: str):
        """Count a request in service for its duration; yields (requests in service including
        this one, the Fault it triggers or None)."""
        with self._lock:
            self._in_service += 1
            self._max_concurrent = max(self._max_concurrent, self._in_service)
            concurrent = self._in_service
            fault = next((f for f in self.faults if f.hits(prompt)), None)
        try:
            yield concurrent, fault
        finally:
            with self._lock:
                self._in_service -= 1

    @property
    def in_service(self) -> int:
        """Requests the server is serving now (a client may have its answer a moment before its
        handler leaves service)."""
        with self._lock:
            return self._in_service

    @property
    def max_concurrent(self) -> int:
        """The most requests in service at once since start (or the last clear_log)."""
        with self._lock:
            return self._max_concurrent

    def _log(self, rec: RequestRecord) -> None:
        with self._lock:
            self._records.append(rec)

    @property
    def requests(self) -> list:
        """Served requests in order of completion (a copy)."""
        with self._lock:
            return list(self._records)

    def clear_log(self) -> None:
        with self._lock:
            self._records.clear()
            self._max_concurrent = self._in_service

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("SimServer is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._addr[0]}:{self.port}/v1"

    def start(self) -> str:
        """Start serving in a background thread; returns the base URL (…/v1)."""
        if self._httpd is None:
            self._httpd = _Server(self._addr, self)
            self._thread = threading.Thread(target=self._httpd.serve_forever,
                                            name="poppy-sim", daemon=True)
            self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join()
            self._httpd = self._thread = None

    def __enter__(self) -> "SimServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def parse_fault(text: str) -> Fault:
    """A `--fault` value: STATUS then `:key=value` fields of `Fault` (e.g. 429:first=2)."""
    status, *fields = text.split(":")
    kwargs: dict = {}
    types = {"match": str, "first": int, "every": int, "retry_after": float, "hang": float,
             "retry_after_ms": float, "should_retry": lambda v: v.lower() in ("1", "true")}
    for item in fields:
        key, sep, value = item.partition("=")
        if not sep or key not in types:
            raise argparse.ArgumentTypeError(f"bad fault field {item!r}; keys: {', '.join(types)}")
        kwargs[key] = types[key](value)
    try:
        return Fault(int(status), **kwargs)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad fault status {status!r}") from None


def main(argv: list | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m poppy_jit.sim", description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0, help="port (0: let the OS choose)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--app", choices=sorted(APPS), default="echo", help="scripted responder")
    ap.add_argument("--ttft", type=float, default=LatencyModel.ttft, help="seconds")
    ap.add_argument("--per-token", type=float, default=LatencyModel.per_token, help="seconds")
    ap.add_argument("--jitter", type=float, default=0.0, help="relative, e.g. 0.1 = ±10%%")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--fault", action="append", default=[], type=parse_fault,
                    metavar="STATUS[:key=value...]",
                    help="inject failures, e.g. 429:first=2:retry_after=0.5:match=Oceania "
                         "(keys: the fields of sim.Fault); repeatable")
    args = ap.parse_args(argv)
    sim = SimServer(APPS[args.app], LatencyModel(args.ttft, args.per_token, args.jitter,
                                                 args.seed, args.time_scale),
                    host=args.host, port=args.port, faults=args.fault)
    url = sim.start()
    print(f"poppy-sim ({args.app}) serving at {url}\n"
          f"in another shell:  export OPENAI_BASE_URL={url}", flush=True)
    try:
        sim._thread.join()
    except KeyboardInterrupt:
        sim.stop()


if __name__ == "__main__":
    main()
