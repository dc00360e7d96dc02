// tests/exporter/otlp_receiver.mjs: an OTLP/HTTP metrics receiver for the exporter's test. It
// listens on 127.0.0.1 (a free port, printed as "port N"), decodes each POST to /v1/metrics
// with OpenTelemetry's own OTLP definitions (@opentelemetry/otlp-transformer's generated
// protobuf root, from COLLSCOPE_NPM_DIR), appends it as one JSON line to OUT and answers
// 200 with an empty ExportMetricsServiceResponse. A request it cannot decode gets 400 and a
// line {"error": ...}.
//   node otlp_receiver.mjs OUT
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const out = process.argv[2];
const req = createRequire(path.resolve(process.env.COLLSCOPE_NPM_DIR || '.', 'package.json'));
let root;
try {
  root = req('@opentelemetry/otlp-transformer/build/src/generated/root');
} catch (e) {
  console.error(`otlp_receiver: OpenTelemetry's OTLP definitions cannot be loaded (scripts/setup.sh installs them): ${e.message}`);
  process.exit(3);
}
const v1 = root.opentelemetry.proto.collector.metrics.v1;

const server = http.createServer((rq, rs) => {
  const chunks = [];
  rq.on('data', c => chunks.push(c));
  rq.on('end', () => {
    let line;
    try {
      if (rq.method !== 'POST' || rq.url !== '/v1/metrics') throw new Error(`${rq.method} ${rq.url}`);
      if (rq.headers['content-type'] !== 'application/x-protobuf') throw new Error(`content-type ${rq.headers['content-type']}`);
      const msg = v1.ExportMetricsServiceRequest.decode(Buffer.concat(chunks));
      const err = v1.ExportMetricsServiceRequest.verify(msg);
      if (err) throw new Error(err);
      line = v1.ExportMetricsServiceRequest.toObject(msg, { longs: String, enums: String, defaults: false, arrays: true });
    } catch (e) {
      line = { error: String(e.message || e) };
    }
    fs.appendFileSync(out, JSON.stringify(line) + '\n');   // before the answer: the sender may exit then
    if (line.error) {
      rs.writeHead(400);
      rs.end();
    } else {
      rs.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
      rs.end(Buffer.from(v1.ExportMetricsServiceResponse.encode({}).finish()));
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
