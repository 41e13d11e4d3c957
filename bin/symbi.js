#!/usr/bin/env node
// The compiled entry point; `npm ci` builds dist/ through the `prepare` script.
import '../dist/supervisor/cli.js';
