#!/usr/bin/env node
// schemas.mjs compiles the input and output schemas of every tool in a tools/list with
// the two JSON Schema validators real MCP clients use, and prints one JSON
// line with every schema either refused. The Go test
// (tests/e2e_schemas_test.go) lists the tools of the real binary and judges
// the result; this script judges nothing itself.
//
//   node schemas.mjs FILE     FILE: a JSON array of tools ({name, inputSchema, outputSchema})
//
// - Ajv 8 (draft 2020-12) in strict mode, as LangChain and n8n use it: every
//   pattern is compiled with the `u` flag, and unknown keywords, keywords
//   that do not apply to the declared type and other sloppiness are errors.
// - @cfworker/json-schema, the validator of the TypeScript SDK on edge
//   runtimes: it compiles each pattern (`new RegExp(p, "u")`) when it
//   validates, so every pattern and patternProperties key is exercised
//   through it, and the whole schema validates an empty object.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { Validator } from "@cfworker/json-schema";

const tools = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = { tools: tools.length, patterns: 0, ajv: [], cfworker: [] };

// walk visits every subschema of a schema.
function walk(s, visit) {
  if (!s || typeof s !== "object") return;
  if (Array.isArray(s)) {
    for (const x of s) walk(x, visit);
    return;
  }
  visit(s);
  for (const k of ["properties", "patternProperties", "$defs"]) {
    if (s[k] && typeof s[k] === "object") for (const v of Object.values(s[k])) walk(v, visit);
  }
  for (const k of ["items", "additionalProperties", "not", "contains", "propertyNames"]) walk(s[k], visit);
  for (const k of ["anyOf", "oneOf", "allOf", "prefixItems"]) walk(s[k], visit);
}

// Each tool's input schema, and its output schema when it has one (the
// SDK validates structuredContent against it).
for (const tool of tools.flatMap((t) => [{ name: t.name, schema: t.inputSchema }, ...(t.outputSchema ? [{ name: `${t.name} (outputSchema)`, schema: t.outputSchema }] : [])])) {
  const schema = tool.schema;
  try {
    // A fresh instance per tool: the schemas have no $id, and a shared one
    // would keep every compiled function.
    new Ajv2020({ strict: true, allErrors: true }).compile(schema);
  } catch (err) {
    out.ajv.push({ tool: tool.name, error: String(err?.message ?? err) });
  }
  const problems = [];
  walk(schema, (s) => {
    const check = (what, sub, instance) => {
      out.patterns++;
      try {
        new Validator(sub, "2020-12", false).validate(instance);
      } catch (err) {
        problems.push(`${what}: ${err?.message ?? err}`);
      }
    };
    if (typeof s.pattern === "string") check(`pattern ${s.pattern}`, { type: "string", pattern: s.pattern }, "");
    for (const p of Object.keys(s.patternProperties ?? {})) check(`patternProperties ${p}`, { type: "object", patternProperties: { [p]: {} } }, {});
  });
  try {
    new Validator(schema, "2020-12", false).validate({});
  } catch (err) {
    problems.push(`schema: ${err?.message ?? err}`);
  }
  if (problems.length) out.cfworker.push({ tool: tool.name, errors: problems });
}

process.stdout.write(JSON.stringify(out) + "\n");
