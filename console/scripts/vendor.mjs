// Copies uPlot's ES module build and stylesheet from node_modules into src/vendor/ (shipped
// with the binary) and its type declarations into types/vendor/ (for `tsc` only).
//
//   node scripts/vendor.mjs          # copy
//   node scripts/vendor.mjs --check  # exit 1 when a vendored copy differs from node_modules
import { readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const uplot = join(root, "node_modules", "uplot");

/** @type {Array<[string, string]>} [from (under node_modules/uplot), to (under console/)] */
const FILES = [
  ["dist/uPlot.esm.js", "src/vendor/uPlot.esm.js"],
  ["dist/uPlot.min.css", "src/vendor/uPlot.min.css"],
  ["dist/uPlot.d.ts", "types/vendor/uPlot.esm.d.ts"],
  ["LICENSE", "src/vendor/uPlot.LICENSE"],
];

if (!existsSync(join(uplot, "package.json"))) {
  console.error("vendor: node_modules/uplot is missing: run `npm ci` in console/ first");
  process.exit(2);
}
const version = JSON.parse(readFileSync(join(uplot, "package.json"), "utf8")).version;
const check = process.argv.includes("--check");
let stale = 0;
for (const [from, to] of FILES) {
  const want = readFileSync(join(uplot, from));
  const dest = join(root, to);
  if (check) {
    if (!existsSync(dest) || !readFileSync(dest).equals(want)) {
      console.error(`vendor: ${to} differs from node_modules/uplot/${from} (uplot ${version}): run \`npm run vendor\``);
      stale++;
    }
  } else {
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, want);
  }
}
if (stale) process.exit(1);
console.log(check ? `vendor: up to date (uplot ${version})` : `vendor: copied uplot ${version}`);
