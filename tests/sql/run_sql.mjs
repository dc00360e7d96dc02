// tests/sql/run_sql.mjs: runs one named SQL block of docs/dump-format.md ("-- collscope-sql:
// NAME"), after its "views" block, on a dump directory with DuckDB, and prints the rows as JSON.
//   node run_sql.mjs DOC DUMPS NAME [KEY=VALUE...]   (each KEY in the SQL text replaced by VALUE)
// The engine comes from the npm folder in COLLSCOPE_NPM_DIR (scripts/setup.sh: BUILD_DIR/npm).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [doc, dumps, name, ...subs] = process.argv.slice(2);
if (!doc || !dumps || !name) {
  console.error('usage: run_sql.mjs DOC DUMPS NAME [KEY=VALUE...]');
  process.exit(2);
}
let api;
try {
  const req = createRequire(path.resolve(process.env.COLLSCOPE_NPM_DIR || '.', 'package.json'));
  api = await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
} catch (e) {
  console.error(`run_sql: DuckDB's node API cannot be loaded (scripts/setup.sh installs it): ${e.message}`);
  process.exit(3);
}

function block(text, want) {
  const re = /```sql\n-- collscope-sql: (\S+)\n([\s\S]*?)```/g;
  for (let m; (m = re.exec(text)) !== null;) if (m[1] === want) return m[2];
  throw new Error(`no "-- collscope-sql: ${want}" block in ${doc}`);
}

const text = fs.readFileSync(doc, 'utf8');
let sql = block(text, 'views') + '\n' + block(text, name);
sql = sql.replaceAll('DUMPS', dumps);
for (const kv of subs) {
  const i = kv.indexOf('=');
  sql = sql.replaceAll(kv.slice(0, i), kv.slice(i + 1));
}
const db = await api.DuckDBInstance.create(':memory:');
const con = await db.connect();
let rows = [];
for (const stmt of sql.split(/;\s*\n/).map(s => s.trim()).filter(Boolean)) {
  const r = await con.runAndReadAll(stmt);
  rows = r.getRowObjectsJson();
}
console.log(JSON.stringify(rows));
