// Two Yjs editors (npm `yjs`, V1 updates) typing into one team-memory entry through Cairn's HTTP
// API; both converge on one text through the server. Needs a running stack: CAIRN_BASE_URL and
// CAIRN_TOKEN (a token with context:admin); tests/e2e/test_team_node.py starts the local stack
// and runs this file.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as Y from 'yjs'

const BASE = process.env.CAIRN_BASE_URL
const ADMIN = process.env.CAIRN_TOKEN
const MEM = '/api/v1/context/memory'
const b64 = (u8) => Buffer.from(u8).toString('base64')
const unb64 = (s) => new Uint8Array(Buffer.from(s, 'base64'))
let counter = 0
const freshId = () => `node-${process.pid}-${Date.now()}-${++counter}`

async function call (token, method, path, body) {
  const res = await fetch(BASE + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

async function ok (token, method, path, body, want = 200) {
  const r = await call(token, method, path, body)
  assert.equal(r.status, want, `${method} ${path}: ${JSON.stringify(r.body)}`)
  return r.body
}

// One editor: a Y.Doc with a fresh client id, whose local updates are collected.
class Editor {
  constructor (name, token) {
    this.name = name
    this.token = token
    this.doc = new Y.Doc()
    this.text = this.doc.getText('content')
    this.pending = []
    this.doc.on('update', (u, origin) => { if (origin !== 'server') this.pending.push(u) })
  }

  applyServer (u8) { Y.applyUpdate(this.doc, u8, 'server') }
  takePending () { const p = this.pending; this.pending = []; return p }
  post (entryId, update, updateId = freshId()) {
    return call(this.token, 'POST', `${MEM}/entries/${entryId}/updates`, { updateId, update: b64(update) })
  }

  async catchUp (entryId) {
    const sv = b64(Y.encodeStateVector(this.doc))
    const r = await ok(this.token, 'GET', `${MEM}/entries/${entryId}/updates?stateVector=${encodeURIComponent(sv)}`)
    this.applyServer(unb64(r.update))
  }
}

test('two editors converge through the server, with the error paths', { skip: !BASE && 'CAIRN_BASE_URL not set' }, async () => {
  const space = await ok(ADMIN, 'POST', '/api/v1/context/spaces', { name: `node-${Date.now()}` }, 201)
  const tokens = {}
  for (const user of ['node-alice', 'node-bob']) {
    const minted = await ok(ADMIN, 'POST', '/v1/api/admin/tokens', { kind: 'person', user_id: user, permissions: [] }, 201)
    tokens[user] = minted.token
    await ok(ADMIN, 'PUT', `/api/v1/context/spaces/${space.id}/members/${user}`,
      { permissions: ['context:space:read', 'context:space:write'] })
  }
  const entry = await ok(tokens['node-alice'], 'POST', `${MEM}/entries`,
    { spaceId: space.id, kind: 'convention', title: 'Commit messages' }, 201)
  const alice = new Editor('alice', tokens['node-alice'])
  const bob = new Editor('bob', tokens['node-bob'])
  const start = await ok(alice.token, 'GET', `${MEM}/entries/${entry.id}`)
  alice.applyServer(unb64(start.snapshot))
  bob.applyServer(unb64(start.snapshot))

  // Both type at the same time, neither has seen the other's text.
  alice.text.insert(0, 'Use the imperative mood. ')
  bob.text.insert(0, 'Keep the subject under 72 characters. ')
  // ...and post at the same time: the server merges both (concurrent inserts are causally complete).
  const [aliceFirst] = alice.takePending()
  const [bobFirst] = bob.takePending()
  const posted = await Promise.all([alice.post(entry.id, aliceFirst), bob.post(entry.id, bobFirst)])
  assert.deepEqual(posted.map((r) => r.status), [200, 200], JSON.stringify(posted.map((r) => r.body)))

  // Bob falls behind: his next edit is lost in transit, the one after depends on it.
  bob.text.insert(bob.text.length, 'Reference the issue. ')
  bob.takePending() // lost
  bob.text.insert(bob.text.length, 'Wrap the body at 72.')
  const [dependent] = bob.takePending()
  const refused = await bob.post(entry.id, dependent)
  assert.equal(refused.status, 409)
  assert.equal(refused.body.code, 'missing_dependency')
  const resend = Y.encodeStateAsUpdate(bob.doc, unb64(refused.body.details.stateVector))
  const resent = await bob.post(entry.id, resend)
  assert.equal(resent.status, 200, JSON.stringify(resent.body))

  // Alice keeps typing concurrently.
  alice.text.insert(alice.text.length, 'No trailing period.')
  const [aliceMore] = alice.takePending()
  const retryId = freshId()
  assert.equal((await alice.post(entry.id, aliceMore, retryId)).status, 200)

  // A retried update is harmless; reusing its id for other bytes is refused.
  const dup = await alice.post(entry.id, aliceMore, retryId)
  assert.deepEqual([dup.status, dup.body.duplicate], [200, true])
  const reused = await alice.post(entry.id, Y.encodeStateAsUpdate(alice.doc), retryId)
  assert.deepEqual([reused.status, reused.body.code], [409, 'update_id_reused'])

  // Both catch up and converge to the server's text.
  await alice.catchUp(entry.id)
  await bob.catchUp(entry.id)
  const server = await ok(alice.token, 'GET', `${MEM}/entries/${entry.id}`)
  assert.equal(alice.text.toString(), server.text)
  assert.equal(bob.text.toString(), server.text)
  for (const part of ['Use the imperative mood. ', 'Keep the subject under 72 characters. ', 'Reference the issue. ',
    'Wrap the body at 72.', 'No trailing period.']) {
    assert.ok(server.text.includes(part), `${part} in ${server.text}`)
  }

  // Plain text only: formatting, a Map and a V2 update are refused.
  const scratch = new Y.Doc()
  Y.applyUpdate(scratch, Y.encodeStateAsUpdate(alice.doc))
  const before = Y.encodeStateVector(scratch)
  scratch.getText('content').format(0, 3, { bold: true })
  const formatting = Y.encodeStateAsUpdate(scratch, before)
  const mapDoc = new Y.Doc()
  mapDoc.getMap('content').set('title', 'not text')
  const v2 = Y.encodeStateAsUpdateV2(alice.doc)
  for (const [label, update] of [['formatting', formatting], ['map', Y.encodeStateAsUpdate(mapDoc)], ['v2', v2]]) {
    const r = await alice.post(entry.id, update)
    assert.deepEqual([label, r.status, r.body.code], [label, 422, 'unsupported_update'])
  }
  const after = await ok(alice.token, 'GET', `${MEM}/entries/${entry.id}`)
  assert.equal(after.text, server.text)
})
