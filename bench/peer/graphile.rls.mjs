// PostGraphile 5 with row-level security, the rules section's peer
// (bench/cmd/ddsbench/rulespeer.go): the base config, plus the JWT handling
// PostGraphile's docs recommend (in grafast.context, not the lazy preset):
// the bearer token DDS minted for the user is verified with the same
// secret, issuer and audience, and becomes pgSettings, so each request runs
// as the RLS role with jwt.claims.sub set, which the policies read.
// Verified tokens are kept (bounded) as DDS keeps them, so neither side
// pays a signature check per request.
import jwt from "jsonwebtoken";
import base from "./graphile.config.mjs";

const secret = process.env.DDSBENCH_JWT_SECRET;
const audience = process.env.DDSBENCH_JWT_AUDIENCE;
const role = process.env.DDSBENCH_RLS_ROLE;
if (!secret || !audience || !role) {
  throw new Error("DDSBENCH_JWT_SECRET, DDSBENCH_JWT_AUDIENCE and DDSBENCH_RLS_ROLE must be set");
}

const verified = new Map(); // token -> claims
function claimsOf(token) {
  let claims = verified.get(token);
  if (claims === undefined) {
    claims = jwt.verify(token, secret, { algorithms: ["HS256"], issuer: "dds", audience });
    if (verified.size >= 10000) verified.clear();
    verified.set(token, claims);
  } else if (claims.exp * 1000 <= Date.now()) {
    throw Object.assign(new Error("token expired"), { statusCode: 401 });
  }
  return claims;
}

export default {
  extends: [base],
  grafast: {
    context(requestContext) {
      const header = requestContext.node?.req?.headers?.authorization ?? "";
      const [scheme, token] = header.split(" ");
      if (scheme !== "Bearer" || !token) {
        return { pgSettings: { role } }; // anonymous: no claim, so no rows
      }
      const claims = claimsOf(token);
      return { pgSettings: { role, "jwt.claims.sub": String(claims.sub) } };
    },
  },
};
