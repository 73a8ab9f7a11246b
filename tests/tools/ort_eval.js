// ONNX Runtime (onnxruntime-node) on a model: the independent runtime the
// --save-infer test checks served models with.
//   node ort_eval.js MODEL.onnx INPUTS.json OUTPUTS.json
// INPUTS.json: {"name": {"type": "float32"|"int64", "dims": [...], "data": [...]}}
// OUTPUTS.json receives every output of the model the same way (float32
// data as numbers). Exits 1 with the error on failure. NODE_PATH must reach
// onnxruntime-node (tests/tools/ort_node_path.sh prints it).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inPath, outPath] = process.argv.slice(2);
  const inputs = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const feeds = {};
  for (const [name, t] of Object.entries(inputs)) {
    const data = t.type === 'int64' ? BigInt64Array.from(t.data.map(BigInt))
                                    : Float32Array.from(t.data);
    feeds[name] = new ort.Tensor(t.type, data, t.dims);
  }
  const session = await ort.InferenceSession.create(model);
  const got = await session.run(feeds);
  const out = {};
  for (const [name, t] of Object.entries(got))
    out[name] = {type: t.type, dims: t.dims,
                 data: Array.from(t.data, (v) => (typeof v === 'bigint' ? Number(v) : v))};
  out.__inputs = session.inputNames;
  fs.writeFileSync(outPath, JSON.stringify(out));
}

main().catch((e) => {
  console.error('onnxruntime: ' + e.message);
  process.exit(1);
});
