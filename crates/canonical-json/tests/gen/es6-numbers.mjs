// Prints `<16 hex digits of the IEEE-754 bits>,<String(x)>` for COUNT finite doubles:
// fixed edge cases, then seeded random bit patterns and random "decimal-looking" values.
// Usage: node es6-numbers.mjs COUNT SEED
const count = Number(process.argv[2] ?? 100000);
let state = BigInt(process.argv[3] ?? 1) | 1n;
const mask = (1n << 64n) - 1n;
function next() {
  // xorshift64*
  state ^= state >> 12n; state ^= (state << 25n) & mask; state ^= state >> 27n;
  return (state * 0x2545F4914F6CDD1Dn) & mask;
}
const view = new DataView(new ArrayBuffer(8));
function emit(x) {
  view.setFloat64(0, x);
  const hex = view.getBigUint64(0).toString(16).padStart(16, '0');
  process.stdout.write(`${hex},${String(x)}\n`);
}
const edges = [0, -0, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
  1.7976931348623157e308, -1.7976931348623157e308, 9007199254740991, 9007199254740992,
  0.1, 0.2, 0.1 + 0.2, 1 / 3, 2 / 3, 333333333.3333333, 1e21, 1e-7, 1e-6, 123456789012345680000];
for (let e = -324; e <= 308; e++) { edges.push(Number(`1e${e}`)); edges.push(Number(`-4.35e${e}`)); }
let n = 0;
for (const x of edges) { if (Number.isFinite(x) && n < count) { emit(x); n++; } }
while (n < count) {
  const r = next();
  let x;
  if (r % 3n === 0n) {
    // A short decimal mantissa with a random exponent: exercises the layout thresholds.
    const digits = Number(next() % 100000000n);
    const exp = Number(next() % 60n) - 30;
    x = Number(`${digits}e${exp}`);
  } else {
    view.setBigUint64(0, next());
    x = view.getFloat64(0);
  }
  if (!Number.isFinite(x)) continue;
  emit(x);
  n++;
}
