import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SwitchboardError, ErrorCode } from '../src/switchboard.js';
import { makeClient, connectClient, okFrame, FakeWebSocket, flush } from './helpers.js';

// Answers as docs/protocol.md 6.5 shows them.
const TOKEN = '5f2b9c0e7a41d3886b0f1e2d4c6a8b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8';
const DEVICE = { created_at: 1795310000000, device_id: '818c06c413fa4f8cc7b83683', provider: 'apns_voip', token: TOKEN, user_id: 'bob' };

test('registerDevice sends device.register and resolves with the device', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const p = client.registerDevice('apns_voip', TOKEN);
  await flush();
  const req = ws.lastSent('device.register');
  assert.deepEqual(req.data, { provider: 'apns_voip', token: TOKEN });
  assert.equal(typeof req.id, 'number');
  ws.serverSend({ type: 'response', id: req.id, data: { device: DEVICE } });
  assert.deepEqual(await p, DEVICE);
});

test('listDevices sends device.list without data and resolves with the array', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const p = client.listDevices();
  await flush();
  const req = ws.lastSent('device.list');
  assert.deepEqual(req, { id: req.id, type: 'device.list' });
  const second = { ...DEVICE, device_id: 'a1b2c3d4e5f6a7b8c9d0e1f2', provider: 'fcm', token: 'fcm-token', created_at: 1795310001000 };
  ws.serverSend({ type: 'response', id: req.id, data: { devices: [DEVICE, second] } });
  assert.deepEqual(await p, [DEVICE, second]);
  const empty = client.listDevices();
  await flush();
  ws.answer('device.list', { type: 'response', data: { devices: [] } });
  assert.deepEqual(await empty, []);
});

test('unregisterDevice sends device.unregister and resolves with nothing', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const p = client.unregisterDevice('apns_voip', TOKEN);
  await flush();
  assert.deepEqual(ws.lastSent('device.unregister').data, { provider: 'apns_voip', token: TOKEN });
  ws.answer('device.unregister', { type: 'response', data: { removed: true } });
  assert.equal(await p, undefined);
});

test('server errors surface as SwitchboardError: too_many_devices, not_found, payload_too_large', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const r = client.registerDevice('fcm', 'eleventh');
  await flush();
  ws.answer('device.register', { type: 'error', error: { code: 'too_many_devices', message: 'user bob has 10 devices; unregister one first' } });
  await assert.rejects(r, (e) => e instanceof SwitchboardError && e.code === ErrorCode.TOO_MANY_DEVICES
    && e.retryable === false && e.requestType === 'device.register' && /unregister one first/.test(e.message));
  const u = client.unregisterDevice('fcm', 'never-registered');
  await flush();
  ws.answer('device.unregister', { type: 'error', error: { code: 'not_found', message: 'no such device' } });
  await assert.rejects(u, (e) => e instanceof SwitchboardError && e.code === ErrorCode.NOT_FOUND
    && e.retryable === false && e.requestType === 'device.unregister');
  const big = client.registerDevice('webpush', 'x'.repeat(5000));
  await flush();
  ws.answer('device.register', { type: 'error', error: { code: 'payload_too_large', message: 'data.token is longer than 4096 bytes' } });
  await assert.rejects(big, (e) => e.code === 'payload_too_large');
  assert.equal(client.connectionState, 'connected'); // an error answer leaves the socket alone
});

test('a bad provider or token is invalid_request before anything is sent', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const sent = ws.sent.length;
  for (const [provider, token] of [['gcm', TOKEN], ['APNS', TOKEN], [undefined, TOKEN], ['apns', ''], ['apns', undefined], ['fcm', 42], ['apns', { endpoint: 'x' }]]) {
    await assert.rejects(client.registerDevice(provider, token), (e) => e instanceof SwitchboardError && e.code === 'invalid_request' && e.requestType === 'device.register', `${provider} ${token}`);
  }
  await assert.rejects(client.unregisterDevice('pushy', TOKEN), (e) => e.code === 'invalid_request' && e.requestType === 'device.unregister' && /apns, apns_voip, fcm, webpush/.test(e.message));
  await flush();
  assert.equal(ws.sent.length, sent);
});

test('webpush: a PushSubscription is sent as its JSON text', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const keys = { p256dh: 'BNc…', auth: 'tBH…' };
  const subscription = { toJSON: () => ({ endpoint: 'https://push.example.net/send/abc', expirationTime: null, keys }) };
  const p = client.registerDevice('webpush', subscription);
  await flush();
  const text = ws.lastSent('device.register').data.token;
  assert.equal(text, '{"endpoint":"https://push.example.net/send/abc","expirationTime":null,"keys":{"p256dh":"BNc…","auth":"tBH…"}}');
  ws.answer('device.register', { type: 'response', data: { device: { ...DEVICE, provider: 'webpush', token: text } } });
  assert.equal((await p).token, text);
});

test('device requests wait for the connection; with persistSocket false the socket opens for them and closes after', async () => {
  const { client, clock } = makeClient({ persistSocket: false });
  assert.equal(client.connectionState, 'idle');
  const p = client.registerDevice('apns', TOKEN);
  await flush();
  const ws = FakeWebSocket.last;
  assert.ok(ws, 'socket opened lazily');
  assert.equal(ws.lastSent('device.register'), undefined); // not before connection.ok
  ws.open(); await flush();
  ws.serverSend({ ...okFrame(), id: 'auth' });
  await flush();
  assert.equal(ws.sent[0].type, 'auth');
  ws.answer('device.register', { type: 'response', data: { device: { ...DEVICE, provider: 'apns' } } });
  assert.equal((await p).provider, 'apns');
  await clock.advance(10);
  assert.equal(client.connectionState, 'disconnected'); // no call is active
});

test('a device request made while connecting is sent after connection.ok', async () => {
  const { client } = makeClient();
  const c = client.connect();
  await flush();
  const l = client.listDevices();
  await flush();
  const ws = FakeWebSocket.last;
  ws.open(); await flush();
  assert.equal(ws.lastSent('device.list'), undefined);
  ws.serverSend({ ...okFrame(), id: 'auth' });
  await c;
  await flush();
  ws.answer('device.list', { type: 'response', data: { devices: [DEVICE] } });
  assert.deepEqual(await l, [DEVICE]);
  assert.equal(client.connectionState, 'connected'); // persistSocket keeps it
});
