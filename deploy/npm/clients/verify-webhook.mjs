// Verifies a webhook delivery with the standardwebhooks package, as a
// receiver would. Reads {"headers": {...}, "body": "<raw body>"} on stdin;
// prints the verified payload as JSON, or exits 1 with the reason. Usage:
//   node verify-webhook.mjs <signing secret (whsec_...)>
import { Webhook } from 'standardwebhooks';

const secret = process.argv[2];
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { headers, body } = JSON.parse(input);
try {
  const payload = new Webhook(secret).verify(body, headers);
  console.log(JSON.stringify(payload));
} catch (err) {
  console.error('verification failed: ' + err.message);
  process.exit(1);
}
