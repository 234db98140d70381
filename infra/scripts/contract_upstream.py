"""A minimal OpenAI-compatible upstream for the API contract run: the gateway's chat
operations need a model server behind them. Answers every chat completion with one short
reply (an SSE stream when asked), and prints its base URL on its first line."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Upstream(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        n = body.get("n") if isinstance(body.get("n"), int) and 0 < body["n"] <= 8 else 1
        message = {"role": "assistant", "content": "ok"}
        if body.get("stream") is True:
            chunk = {"object": "chat.completion.chunk", "model": body.get("model"), "choices": [
                {"index": i, "delta": message, "finish_reason": "stop"} for i in range(n)]}
            payload = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            kind = "text/event-stream"
        else:
            reply = {"id": "c", "object": "chat.completion", "created": 0,
                     "model": body.get("model"), "choices": [
                         {"index": i, "message": message, "finish_reason": "stop"}
                         for i in range(n)]}
            payload, kind = json.dumps(reply).encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
server.serve_forever()
