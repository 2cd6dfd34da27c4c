import { describe, expect, it } from 'vitest';
import { embeddedV4, isPublicAddress, mayConnect, PrivateHostAllowance } from './address-policy.ts';
import { sniffImageType } from './image-type.ts';

describe('isPublicAddress: IPv4', () => {
  it.each([
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1',
    '169.254.169.254', '169.254.0.1', '100.64.0.1', '100.127.255.255', '0.0.0.0', '0.1.2.3', '224.0.0.1', '239.255.255.250',
    '255.255.255.255', '240.0.0.1', '192.0.2.10', '198.51.100.1', '203.0.113.9', '198.18.0.1', '192.0.0.8',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1', '11.0.0.1', '192.169.0.1', '169.253.255.255'])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('isPublicAddress: IPv6', () => {
  it.each(['::1', '::', 'fe80::1', '[fe80::1%eth0]', 'fe80::1%eth0', 'fc00::1', 'fd12:3456:789a::1', 'ff02::1', 'ff05::2', '2001:db8::1', '2001::1', '100::1', '64:ff9b:1::1', 'fec0::1', '::7f00:1'])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '[2606:4700::1]'])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('judges IPv4 carried in IPv6 (mapped, NAT64, 6to4) as that IPv4', () => {
    expect(embeddedV4('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(embeddedV4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(embeddedV4('64:ff9b::a9fe:a9fe')).toBe('169.254.169.254');
    expect(embeddedV4('2002:c0a8:0101::1')).toBe('192.168.1.1');
    expect(embeddedV4('2606:4700::1')).toBeNull();
    for (const address of ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a9fe:a9fe', '64:ff9b::10.1.2.3', '2002:c0a8:0101::1', '2002:7f00:0001::']) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ['::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:0808:0808::1']) expect(isPublicAddress(address), address).toBe(true);
  });

  it('refuses what is not an address at all', () => {
    expect(isPublicAddress('localhost')).toBe(false);
    expect(isPublicAddress('')).toBe(false);
    expect(isPublicAddress('1.2.3')).toBe(false);
  });
});

describe('PrivateHostAllowance', () => {
  it('opens named hosts whatever they resolve to, and CIDR ranges and addresses by the address connected', () => {
    const allowance = new PrivateHostAllowance(['images.internal', '127.0.0.1/32', '10.1.0.0/16', 'fd00::/8', '192.168.7.7']);
    expect(mayConnect('images.internal', '10.9.9.9', allowance)).toBe(true);
    expect(mayConnect('IMAGES.internal.', '10.9.9.9', allowance)).toBe(true);
    expect(mayConnect('other.internal', '10.9.9.9', allowance)).toBe(false);
    expect(mayConnect('x', '127.0.0.1', allowance)).toBe(true);
    expect(mayConnect('x', '::ffff:127.0.0.1', allowance)).toBe(true);
    expect(mayConnect('x', '127.0.0.2', allowance)).toBe(false);
    expect(mayConnect('x', '10.1.200.3', allowance)).toBe(true);
    expect(mayConnect('x', '10.2.0.1', allowance)).toBe(false);
    expect(mayConnect('x', 'fd00::5', allowance)).toBe(true);
    expect(mayConnect('x', '192.168.7.7', allowance)).toBe(true);
    expect(mayConnect('x', '169.254.169.254', allowance)).toBe(false);
    expect(mayConnect('x', '8.8.8.8', allowance)).toBe(true);
  });

  it('is empty and strict by default', () => {
    const none = new PrivateHostAllowance([]);
    expect(none.empty).toBe(true);
    expect(mayConnect('localhost', '127.0.0.1', none)).toBe(false);
    expect(mayConnect('localhost', '::1', none)).toBe(false);
  });

  it('refuses entries that are neither names, addresses nor ranges, naming them', () => {
    expect(() => new PrivateHostAllowance(['10.0.0.0/33'])).toThrow(/10\.0\.0\.0\/33/);
    expect(() => new PrivateHostAllowance(['http://host'])).toThrow(/http:\/\/host/);
    expect(() => new PrivateHostAllowance(['name/8'])).toThrow(/name\/8/);
  });
});

describe('sniffImageType', () => {
  it('tells the four types by their bytes, and nothing else', () => {
    expect(sniffImageType(Buffer.from('89504e470d0a1a0a0000000d', 'hex'))).toBe('image/png');
    expect(sniffImageType(Buffer.from('ffd8ffe000104a4649460001', 'hex'))).toBe('image/jpeg');
    expect(sniffImageType(Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00', 'latin1'))).toBe('image/gif');
    expect(sniffImageType(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'))).toBe('image/webp');
    expect(sniffImageType(Buffer.from('<!doctype html><html>', 'latin1'))).toBeNull();
    expect(sniffImageType(Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1'))).toBeNull();
    expect(sniffImageType(Buffer.from('BM6\x00\x00\x00\x00\x00\x00\x006\x00', 'latin1'))).toBeNull();
  });
});
