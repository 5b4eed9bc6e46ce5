#!/usr/bin/env node
// ONNX Runtime (CPU, the npm registry's onnxruntime-node) as a peer of
// `kiln bench`, measured on the same machine in the same run, written in the
// same JSON schema (kiln-bench-cli-v1, bench/README.md "Peers") so that
// `kiln bench compare` puts it beside Kiln.
//
//   node bench/ort/ort_peer.mjs MODEL... [--warmup N] [--iters N | --min-time S]
//        [--threads N] [--shape NAME=AxB ...] [--seed N] [--json FILE]
//
// Inputs: a zoo directory's input.npy (bench/zoo) when the model has one
// input, else --shape, else the model's static input shape; random inputs
// are seeded (a small LCG, not numpy's: the values differ from kiln's, the
// latency does not depend on them). When output.npy lies beside the model,
// the first run's output is compared with it (reference_max_abs_diff).
//
// Install (once): cd bench/ort && npm ci — npm 11 does not run the package's
// install script, which would fetch CUDA binaries; the CPU runtime is in the
// package itself.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, cpus } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import * as ort from 'onnxruntime-node';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');

// ---- arguments -------------------------------------------------------------

function usage(message) {
  process.stderr.write(`ort_peer: ${message}\n` +
    'usage: ort_peer.mjs MODEL... [--warmup N] [--iters N | --min-time S] [--threads N] ' +
    '[--shape NAME=AxB ...] [--seed N] [--json FILE]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { models: [], warmup: 10, iters: null, minTime: 2, threads: 0, shapes: {}, seed: 0, json: null };
  const number = (flag, text, integer) => {
    const v = Number(text);
    if (text === undefined || !Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v)))
      usage(`${flag} needs a ${integer ? 'non-negative integer' : 'non-negative number'}, got '${text}'`);
    return v;
  };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (arg === '--warmup') a.warmup = number(arg, argv[++i], true);
    else if (arg === '--iters') a.iters = Math.max(1, number(arg, argv[++i], true));
    else if (arg === '--min-time') a.minTime = number(arg, argv[++i], false);
    else if (arg === '--threads') a.threads = number(arg, argv[++i], true);
    else if (arg === '--seed') a.seed = number(arg, argv[++i], true);
    else if (arg === '--json') a.json = argv[++i] ?? usage('--json needs a file');
    else if (arg === '--shape') {
      const m = /^([^=]+)=(\d+(?:x\d+)*)$/.exec(argv[++i] ?? '');
      if (!m) usage(`--shape needs NAME=AxBxC, got '${argv[i]}'`);
      a.shapes[m[1]] = m[2].split('x').map(Number);
    } else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
    else a.models.push(arg);
  }
  if (a.models.length === 0) usage('no model given');
  if (a.iters !== null) a.minTime = null;
  return a;
}

// ---- .npy ------------------------------------------------------------------

const NPY_TYPES = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array] };

function readNpy(path) {
  const bytes = readFileSync(path);
  if (bytes.readUInt32BE(0) !== 0x934e554d) throw new Error(`${path}: not a .npy file`);
  const major = bytes[6];
  const headerLen = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = bytes.subarray(start, start + headerLen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1] ?? '';
  const shape = shapeText.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (!NPY_TYPES[descr] || fortran) throw new Error(`${path}: unsupported .npy (dtype ${descr}, fortran ${fortran})`);
  const [type, Ctor] = NPY_TYPES[descr];
  const count = shape.reduce((p, d) => p * d, 1);
  const data = bytes.subarray(start + headerLen, start + headerLen + count * Ctor.BYTES_PER_ELEMENT);
  const copy = new Ctor(count);
  new Uint8Array(copy.buffer).set(data);
  return new ort.Tensor(type, copy, shape);
}

// ---- statistics (as kiln bench: numpy's linear percentiles) ----------------

function percentile(sorted, q) {
  if (sorted.length === 1) return sorted[0];
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function summary(times) {
  const s = [...times].sort((x, y) => x - y);
  const median = percentile(s, 0.5);
  const p10 = percentile(s, 0.1);
  const p90 = percentile(s, 0.9);
  return {
    count: s.length, median_ms: median, p10_ms: p10, p90_ms: p90, min_ms: s[0], max_ms: s[s.length - 1],
    mean_ms: s.reduce((a, b) => a + b, 0) / s.length, noisy: median > 0 && (p90 - p10) / median > 0.25,
  };
}

// ---- one model -------------------------------------------------------------

function seededTensor(type, shape, seed) {
  const count = shape.reduce((p, d) => p * d, 1);
  let state = (seed * 2654435761 + 12345) >>> 0;
  const next = () => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state / 4294967296; };
  if (type === 'float32') return new ort.Tensor(type, Float32Array.from({ length: count }, () => next() * 2 - 1), shape);
  if (type === 'int64') return new ort.Tensor(type, BigInt64Array.from({ length: count }, () => 0n), shape);
  if (type === 'int32') return new ort.Tensor(type, new Int32Array(count), shape);
  throw new Error(`input type ${type} has no random generator here: give the input as input.npy`);
}

function buildFeeds(session, path, args) {
  const feeds = {};
  const shapes = {};
  const zooInput = join(dirname(path), 'input.npy');
  session.inputNames.forEach((name, i) => {
    let tensor;
    if (args.shapes[name]) {
      const meta = session.inputMetadata?.[i];
      tensor = seededTensor(meta?.type ?? 'float32', args.shapes[name], args.seed + i);
    } else if (session.inputNames.length === 1 && existsSync(zooInput)) {
      tensor = readNpy(zooInput);
    } else {
      const meta = session.inputMetadata?.[i];
      const shape = meta?.shape;
      if (!shape || shape.some((d) => typeof d !== 'number' || d < 0))
        throw new Error(`input '${name}' of ${path} has a dynamic shape: give --shape ${name}=AxB...`);
      tensor = seededTensor(meta.type, shape, args.seed + i);
    }
    feeds[name] = tensor;
    shapes[name] = `[${tensor.dims.join(',')}]`;
  });
  return { feeds, shapes };
}

function maxAbsDiff(output, reference) {
  if (output.data.length !== reference.data.length) return null;
  let worst = 0;
  for (let i = 0; i < output.data.length; ++i) {
    const d = Math.abs(Number(output.data[i]) - Number(reference.data[i]));
    if (!(d <= worst)) worst = d;  // NaN propagates as the worst
  }
  return worst;
}

function modelName(path) {
  const stem = basename(path, extname(path));
  const dir = basename(dirname(resolve(path)));
  return stem === 'model' && dir ? dir : stem;
}

async function benchModel(path, args, options) {
  const record = {
    model: modelName(path), path, sha256: null, status: 'error', error: null, input_shapes: {}, nodes: null,
    dispatches: 0, fallbacks: 0, passes: [],
    cold_start: { import_ms: null, passes_ms: null, compile_cold: null, compile_warm: null, first_run_ms: null },
    wall: null, gpu: null, noisy: false, kernels_gpu_ms: null, kernels: [], ablation: null,
    reference_max_abs_diff: null,
  };
  try {
    let t0 = performance.now();
    const bytes = readFileSync(path);
    record.sha256 = createHash('sha256').update(bytes).digest('hex');
    record.cold_start.import_ms = performance.now() - t0;
    // Session creation: ORT's graph optimizations and kernel selection, its
    // counterpart of Kiln's passes + compile.
    t0 = performance.now();
    const session = await ort.InferenceSession.create(bytes, options);
    record.cold_start.compile_cold = { wall_ms: performance.now() - t0 };
    const { feeds, shapes } = buildFeeds(session, path, args);
    record.input_shapes = shapes;
    t0 = performance.now();
    const first = await session.run(feeds);
    record.cold_start.first_run_ms = performance.now() - t0;
    const reference = join(dirname(path), 'output.npy');
    if (existsSync(reference) && session.outputNames.length === 1)
      record.reference_max_abs_diff = maxAbsDiff(first[session.outputNames[0]], readNpy(reference));
    for (let i = 0; i < args.warmup; ++i) await session.run(feeds);
    const times = [];
    const deadline = performance.now() + (args.minTime ?? 0) * 1000;
    while (args.iters !== null ? times.length < args.iters
      : times.length === 0 || (performance.now() < deadline && times.length < 100000)) {
      t0 = performance.now();
      await session.run(feeds);
      times.push(performance.now() - t0);
    }
    record.wall = summary(times);
    record.noisy = record.wall.noisy;
    record.status = 'ok';
    await session.release();
  } catch (e) {
    record.error = `${path}: ${e.message ?? e}`;
  }
  return record;
}

// ---- the document ----------------------------------------------------------

function git(args) {
  try {
    return execFileSync('git', ['-C', repo, ...args], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return null;
  }
}

function kilnVersion() {
  const cmake = readFileSync(join(repo, 'CMakeLists.txt'), 'utf8');
  return /project\(\s*kiln[^)]*VERSION\s+([\d.]+)/i.exec(cmake)?.[1] ?? 'unknown';
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ortVersion = JSON.parse(readFileSync(join(here, 'node_modules', 'onnxruntime-node', 'package.json'))).version;
  const options = { executionProviders: ['cpu'], graphOptimizationLevel: 'all' };
  if (args.threads > 0) options.intraOpNumThreads = args.threads;
  const models = [];
  process.stderr.write(`ort_peer: benchmarking ${args.models.length} model(s) on onnxruntime-node ${ortVersion} (cpu)\n`);
  for (const [i, path] of args.models.entries()) {
    process.stderr.write(`ort_peer: [${i + 1}/${args.models.length}] ${path}...\n`);
    const r = await benchModel(path, args, options);
    if (r.status === 'ok') {
      const diff = r.reference_max_abs_diff === null ? '' : `  max|d| vs output.npy ${r.reference_max_abs_diff.toExponential(2)}`;
      console.log(`${r.model}: median ${r.wall.median_ms.toFixed(3)} ms (p10 ${r.wall.p10_ms.toFixed(3)}, ` +
        `p90 ${r.wall.p90_ms.toFixed(3)}, ${r.wall.count} runs)${r.noisy ? ' NOISY' : ''}${diff}`);
    } else {
      process.stderr.write(`ort_peer: ${r.error}\n`);
    }
    models.push(r);
  }
  const doc = {
    schema: 'kiln-bench-cli-v1',
    tool: 'bench/ort/ort_peer.mjs',
    created_utc: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    command: ['node', 'bench/ort/ort_peer.mjs', ...process.argv.slice(2)],
    environment: {
      kiln_version: kilnVersion(), git_commit: git(['rev-parse', '--short=12', 'HEAD']), hostname: hostname(),
      backend: 'onnxruntime-cpu', device: null, precision: 'fp32', storage: null, coopmat: null,
      pipeline: 'onnxruntime graphOptimizationLevel=all', disabled_passes: [], plugins: [], seed: args.seed,
      warmup: args.warmup, iters: args.iters, min_time_s: args.minTime,
      engine: { name: 'onnxruntime-node', version: ortVersion, execution_provider: 'cpu',
        intra_op_threads: args.threads > 0 ? args.threads : null, cpu: cpus()[0]?.model ?? null,
        cpu_count: cpus().length },
    },
    models,
  };
  if (args.json) writeFileSync(args.json, JSON.stringify(doc, null, 1) + '\n');
  process.exit(models.every((m) => m.status === 'ok') ? 0 : 1);
}

main().catch((e) => { process.stderr.write(`ort_peer: ${e.stack ?? e}\n`); process.exit(1); });
