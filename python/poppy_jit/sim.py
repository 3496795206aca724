"""A simulated LLM service speaking the OpenAI chat-completions protocol.

`SimServer(responder, latency)` serves `POST /v1/chat/completions` (and `GET /v1/models`) on
127.0.0.1 with an OS-chosen port, answering every request concurrently on its own thread.  Answers
are scripted by a *responder* `(messages, model, params) -> text`, so they are deterministic; the
delay before answering follows a `LatencyModel` (time to first token + time per output token, an
optional jitter that is a deterministic function of the request, and a global `time_scale`).
Every served request is logged (`SimServer.requests`) with its start/end time and latency.

    with SimServer(city_excursions, LatencyModel(ttft=0.3, per_token=0.005)) as sim:
        client = openai.AsyncOpenAI(base_url=sim.base_url, api_key="sim")

Command line: `python -m poppy_jit.sim --port 8000 --app city_excursions`.
"""
from __future__ import annotations

import argparse
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

__all__ = ["SimServer", "LatencyModel", "RequestRecord", "city_excursions", "echo", "APPS",
           "count_tokens"]


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
    """One served chat-completion request (times are `time.perf_counter()` seconds)."""

    id: str
    model: str
    prompt: str  # the last user message
    messages: list
    response: str
    planned_latency: float  # what the latency model asked for
    start: float  # request body received
    end: float = 0.0  # response ready to write
    params: dict = field(default_factory=dict)

    @property
    def latency(self) -> float:
        """Latency as served: from receiving the request to finishing the response."""
        return self.end - self.start


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
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route for POST {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
            messages = body["messages"]
            model = body.get("model", "sim-1")
        except (ValueError, KeyError, TypeError) as exc:
            self._error(400, f"bad request body: {exc}")
            return
        if body.get("stream"):
            self._error(400, "stream=True is not supported by the simulator")
            return
        params = {k: v for k, v in body.items() if k not in ("messages", "model")}
        sim = self.server.sim
        text = sim.responder(messages, model, params)
        planned = sim.latency.latency(messages, model, text)
        rec = RequestRecord(id=f"chatcmpl-{uuid.uuid4().hex[:24]}", model=model,
                            prompt=_last_user_message(messages), messages=messages,
                            response=text, planned_latency=planned, start=start, params=params)
        time.sleep(max(0.0, start + planned - time.perf_counter()))
        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) for m in messages)
        completion_tokens = count_tokens(text)
        # Log before writing, so a client that has its answer always finds the record.
        rec.end = time.perf_counter()
        sim._log(rec)
        self._send_json(200, {
            "id": rec.id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "poppy-sim",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent connects from a parallel client

    def __init__(self, addr: tuple, sim: "SimServer") -> None:
        self.sim = sim
        super().__init__(addr, _Handler)


class SimServer:
    """An in-process simulated LLM service (see module docstring)."""

    def __init__(self, responder: Responder = echo, latency: LatencyModel | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.responder = responder
        self.latency = latency or LatencyModel()
        self._addr = (host, port)
        self._lock = threading.Lock()
        self._records: list = []
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

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
    args = ap.parse_args(argv)
    sim = SimServer(APPS[args.app], LatencyModel(args.ttft, args.per_token, args.jitter,
                                                 args.seed, args.time_scale),
                    host=args.host, port=args.port)
    print(f"poppy-sim ({args.app}) serving at {sim.start()}", flush=True)
    try:
        sim._thread.join()
    except KeyboardInterrupt:
        sim.stop()


if __name__ == "__main__":
    main()
