// The etcd data-model checks through the npm `etcd3` client, the client
// Node.js programs use. One run prints one JSON line per check:
// {"client":"npm-etcd3","check":NAME,"ok":BOOL,"detail":TEXT}. Every check
// states what etcd 3.4 does; `node/tests/it/client_libraries.rs` runs this file
// against real etcd and against leasesim-node and compares the verdicts.
//
// Usage: node suite.js --endpoint 127.0.0.1:2379 [--only NAME]
'use strict';

const { Etcd3, EtcdLockFailedError } = require('etcd3');

const STEP_TIMEOUT_MS = 8000;

function parseArgs(argv) {
  const args = { endpoint: null, only: null };
  for (let i = 2; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--endpoint' && value) args.endpoint = value;
    else if (flag === '--only' && value) args.only = value;
    else throw new Error(`unknown or incomplete flag: ${flag} (usage: node suite.js --endpoint HOST:PORT [--only CHECK])`);
  }
  if (!args.endpoint) throw new Error('--endpoint HOST:PORT is required');
  return args;
}

function expect(cond, detail) {
  if (!cond) throw new Error(detail);
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Each check gets a fresh key prefix so runs never see each other's keys.
const CHECKS = {
  async 'kv.put-get'(c, p) {
    await c.put(`${p}k`).value('v1');
    const v = await c.get(`${p}k`).string();
    expect(v === 'v1', `read ${v}, wrote v1`);
  },

  async 'kv.bytes-values'(c, p) {
    const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x80]);
    await c.put(`${p}k`).value(bytes);
    const back = await c.get(`${p}k`).buffer();
    expect(back && back.equals(bytes), `read ${back && back.toString('hex')}, wrote ${bytes.toString('hex')}`);
  },

  async 'kv.version-counts-writes'(c, p) {
    for (const v of ['a', 'b', 'c']) await c.put(`${p}k`).value(v);
    const res = await c.get(`${p}k`).exec();
    const kv = res.kvs[0];
    expect(kv.version === '3', `version ${kv.version} after three puts`);
    expect(BigInt(kv.create_revision) + 2n === BigInt(kv.mod_revision),
      `create_revision ${kv.create_revision}, mod_revision ${kv.mod_revision}: three puts in a row are two revisions apart`);
  },

  async 'kv.one-revision-per-write'(c, p) {
    const a = await c.put(`${p}a`).value('1').exec();
    const b = await c.put(`${p}b`).value('2').exec();
    const gap = BigInt(b.header.revision) - BigInt(a.header.revision);
    expect(gap === 1n, `revisions ${a.header.revision} then ${b.header.revision}`);
  },

  async 'kv.prev-kv-on-put'(c, p) {
    await c.put(`${p}k`).value('old');
    const prev = await c.put(`${p}k`).value('new').getPrevious();
    expect(prev && prev.value.toString() === 'old', `previous ${prev && prev.value}`);
  },

  async 'kv.prev-kv-on-delete'(c, p) {
    await c.put(`${p}k`).value('gone');
    const prev = await c.delete().key(`${p}k`).getPrevious();
    expect(prev.length === 1 && prev[0].value.toString() === 'gone', `previous ${JSON.stringify(prev)}`);
  },

  async 'kv.delete-prefix'(c, p) {
    for (const k of ['a', 'b', 'c']) await c.put(`${p}d/${k}`).value(k);
    const res = await c.delete().prefix(`${p}d/`).exec();
    expect(res.deleted === '3', `deleted ${res.deleted}`);
    const left = await c.getAll().prefix(`${p}d/`).count();
    expect(left === 0, `${left} left`);
  },

  async 'kv.read-at-past-revision'(c, p) {
    const first = await c.put(`${p}k`).value('then').exec();
    await c.put(`${p}k`).value('now');
    const v = await c.get(`${p}k`).revision(first.header.revision).string();
    expect(v === 'then', `read ${v} at revision ${first.header.revision}`);
  },

  async 'kv.compacted-revision-refused'(c, p) {
    const first = await c.put(`${p}k`).value('1').exec();
    const second = await c.put(`${p}k`).value('2').exec();
    await c.kv.compact({ revision: second.header.revision });
    let error = null;
    try {
      await c.get(`${p}k`).revision(first.header.revision).string();
    } catch (e) {
      error = e;
    }
    expect(error && /compacted/.test(error.message), `reading below the compaction: ${error ? error.message : 'no error'}`);
  },

  async 'txn.several-compares'(c, p) {
    await c.put(`${p}a`).value('x');
    const res = await c.if(`${p}a`, 'Value', '==', 'x').and(`${p}b`, 'Version', '==', 0)
      .then(c.put(`${p}then`).value('1')).else(c.put(`${p}else`).value('1')).commit();
    expect(res.succeeded === true, 'both compares hold, the else branch ran');
    const res2 = await c.if(`${p}a`, 'Value', '==', 'x').and(`${p}a`, 'Version', '==', 9)
      .then(c.put(`${p}then2`).value('1')).else(c.put(`${p}else2`).value('1')).commit();
    expect(res2.succeeded === false, 'the second compare fails, the then branch ran');
  },

  async 'txn.version-compare'(c, p) {
    await c.put(`${p}k`).value('1');
    await c.put(`${p}k`).value('2');
    const res = await c.if(`${p}k`, 'Version', '==', 2).then(c.put(`${p}ok`).value('1')).commit();
    expect(res.succeeded === true, 'version 2 after two puts, but the compare failed');
  },

  async 'txn.atomic-one-revision'(c, p) {
    const res = await c.if(`${p}none`, 'Version', '==', 0)
      .then(c.put(`${p}x`).value('1'), c.put(`${p}y`).value('1'), c.delete().key(`${p}z`)).commit();
    const x = (await c.get(`${p}x`).exec()).kvs[0];
    const y = (await c.get(`${p}y`).exec()).kvs[0];
    expect(x.mod_revision === y.mod_revision && x.mod_revision === res.header.revision,
      `x at ${x.mod_revision}, y at ${y.mod_revision}, txn at ${res.header.revision}`);
  },

  async 'txn.duplicate-key-refused'(c, p) {
    let error = null;
    try {
      await c.if(`${p}none`, 'Version', '==', 0).then(c.put(`${p}k`).value('1'), c.put(`${p}k`).value('2')).commit();
    } catch (e) {
      error = e;
    }
    expect(error && /duplicate key/.test(error.message), `a key written twice: ${error ? error.message : 'accepted'}`);
  },

  async 'watch.burst-delivers-every-event'(c, p) {
    const seen = [];
    const watcher = await c.watch().key(`${p}k`).create();
    const done = new Promise((resolve) => {
      const note = (kind) => (kv) => {
        seen.push(`${kind}:${kv.value.toString()}`);
        if (seen.length === 3) resolve();
      };
      watcher.on('put', note('put')).on('delete', note('delete'));
    });
    await c.put(`${p}k`).value('1');
    await c.put(`${p}k`).value('2');
    await c.delete().key(`${p}k`);
    try {
      await withTimeout(done, 'three events');
    } finally {
      await watcher.cancel();
    }
    expect(seen.join(',') === 'put:1,put:2,delete:', `saw ${seen.join(',')}`);
  },

  async 'watch.start-revision-replays'(c, p) {
    const first = await c.put(`${p}k`).value('1').exec();
    await c.put(`${p}k`).value('2');
    await c.put(`${p}k`).value('3');
    const seen = [];
    const watcher = await c.watch().key(`${p}k`).startRevision(first.header.revision).create();
    const done = new Promise((resolve) => watcher.on('put', (kv) => {
      seen.push(kv.value.toString());
      if (seen.length === 3) resolve();
    }));
    try {
      await withTimeout(done, 'three replayed puts');
    } finally {
      await watcher.cancel();
    }
    expect(seen.join(',') === '1,2,3', `replayed ${seen.join(',')}`);
  },

  async 'watch.prev-kv'(c, p) {
    await c.put(`${p}k`).value('before');
    const watcher = await c.watch().key(`${p}k`).withPreviousKV().create();
    const got = new Promise((resolve) => watcher.on('put', (kv, prev) => resolve(prev)));
    await c.put(`${p}k`).value('after');
    let prev;
    try {
      prev = await withTimeout(got, 'the put event');
    } finally {
      await watcher.cancel();
    }
    expect(prev && prev.value.toString() === 'before', `prev_kv ${prev && prev.value}`);
  },

  async 'lease.grant-put-revoke'(c, p) {
    const lease = c.lease(30, { autoKeepAlive: false });
    await lease.put(`${p}k`).value('v');
    const id = await lease.grant();
    const ttl = await c.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    expect(Number(ttl.TTL) > 0 && Number(ttl.TTL) <= 30, `ttl ${ttl.TTL}`);
    expect(ttl.keys.length === 1 && ttl.keys[0].toString() === `${p}k`, `keys ${ttl.keys}`);
    await lease.revoke();
    const v = await c.get(`${p}k`).string();
    expect(v === null, `key still ${v} after its lease was revoked`);
  },

  async 'lease.keepalive-once'(c, p) {
    const lease = c.lease(30, { autoKeepAlive: false });
    await lease.grant();
    const res = await lease.keepaliveOnce();
    expect(res.TTL === '30', `keep-alive answered TTL ${res.TTL}`);
    await lease.revoke();
  },

  // npm etcd3's lock is a try-lock: a second acquire fails at once while
  // the lock is held, and succeeds after the release.
  async 'lock.mutual-exclusion'(c, p) {
    const first = c.lock(`${p}lock`).ttl(30);
    await first.acquire();
    let refused = null;
    try {
      await c.lock(`${p}lock`).ttl(30).acquire();
    } catch (e) {
      refused = e;
    }
    expect(refused instanceof EtcdLockFailedError, `a second acquire while held: ${refused ? refused.message : 'granted'}`);
    await first.release();
    const second = c.lock(`${p}lock`).ttl(30);
    await second.acquire();
    await second.release();
  },

  async 'election.campaign-and-leader'(c, p) {
    const election = c.election(`${p}election`, 30);
    const campaign = election.campaign('alice');
    await withTimeout(campaign.wait(), 'the campaign');
    const leader = await election.leader();
    expect(leader === 'alice', `leader ${leader}`);
    await campaign.resign();
  },

  // The observer sees the leader's new value when it proclaims one. (A
  // handover to a queued campaign is left out: npm etcd3's campaign can
  // miss a resignation that lands while it sets up its watch, on etcd too.)
  async 'election.observer-sees-change'(c, p) {
    const election = c.election(`${p}election`, 30);
    const a = election.campaign('a');
    await withTimeout(a.wait(), 'the campaign');
    const observer = await election.observe();
    const changed = new Promise((resolve) => observer.on('change', (v) => { if (v === 'a2') resolve(); }));
    await a.proclaim('a2');
    try {
      await withTimeout(changed, 'the observer');
    } finally {
      await observer.cancel();
      await a.resign();
    }
  },
};

async function main() {
  const args = parseArgs(process.argv);
  const client = new Etcd3({ hosts: `http://${args.endpoint}`, dialTimeout: 5000 });
  const run = `npm-${process.pid}-${Date.now()}/`;
  let failed = 0;
  for (const [name, check] of Object.entries(CHECKS)) {
    if (args.only && args.only !== name) continue;
    let ok = true;
    let detail = '';
    try {
      await withTimeout(check(client, `${run}${name}/`), name);
    } catch (e) {
      ok = false;
      detail = String(e && e.message ? e.message : e).split('\n')[0];
      failed += 1;
    }
    console.log(JSON.stringify({ client: 'npm-etcd3', check: name, ok, detail }));
  }
  client.close();
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(`suite.js: ${e.message}`);
  process.exit(2);
});
