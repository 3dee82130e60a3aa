import { LookupAddress } from 'node:dns';
import { BlockedAddressError, BlockedNetworks } from './blocked-networks';

type Answer = (error: Error | null, found: LookupAddress[]) => void;

const OPEN = 'an operator can open its range with WEBHOOK_ALLOWED_NETWORKS';

describe('BlockedNetworks', () => {
  describe('by default (every special-purpose range)', () => {
    const networks = new BlockedNetworks();

    // The first and the last address of every range, where the range is small enough to be worth both.
    it.each([
      ['0.0.0.0', '"this network" 0.0.0.0/8'],
      ['0.255.255.255', '"this network" 0.0.0.0/8'],
      ['10.0.0.0', 'RFC 1918 10.0.0.0/8'],
      ['10.255.255.255', 'RFC 1918 10.0.0.0/8'],
      ['100.64.0.0', 'CGNAT 100.64.0.0/10'],
      ['100.127.255.255', 'CGNAT 100.64.0.0/10'],
      ['127.0.0.1', 'loopback 127.0.0.0/8'],
      ['127.255.255.254', 'loopback 127.0.0.0/8'],
      ['169.254.0.1', 'link-local 169.254.0.0/16'],
      ['169.254.169.254', 'link-local 169.254.0.0/16 (cloud metadata)'],
      ['172.16.0.0', 'RFC 1918 172.16.0.0/12'],
      ['172.31.255.255', 'RFC 1918 172.16.0.0/12'],
      ['192.0.0.0', 'IETF protocol assignments 192.0.0.0/24'],
      ['192.0.0.170', 'IETF protocol assignments 192.0.0.0/24 (NAT64 discovery)'],
      ['192.0.0.255', 'IETF protocol assignments 192.0.0.0/24'],
      ['192.0.2.1', 'documentation 192.0.2.0/24'],
      ['192.31.196.1', 'AS112 192.31.196.0/24'],
      ['192.52.193.1', 'AMT 192.52.193.0/24'],
      ['192.88.99.1', 'deprecated 6to4 relay anycast 192.88.99.0/24'],
      ['192.168.0.0', 'RFC 1918 192.168.0.0/16'],
      ['192.168.255.255', 'RFC 1918 192.168.0.0/16'],
      ['192.175.48.1', 'AS112 192.175.48.0/24'],
      ['198.18.0.0', 'benchmarking 198.18.0.0/15'],
      ['198.19.255.255', 'benchmarking 198.18.0.0/15'],
      ['198.51.100.1', 'documentation 198.51.100.0/24'],
      ['203.0.113.1', 'documentation 203.0.113.0/24'],
      ['224.0.0.1', 'multicast 224.0.0.0/4'],
      ['239.255.255.255', 'multicast 224.0.0.0/4'],
      ['240.0.0.0', 'reserved 240.0.0.0/4'],
      ['255.255.255.254', 'reserved 240.0.0.0/4'],
      ['255.255.255.255', 'limited broadcast'],
      ['168.63.129.16', 'the Azure host address'],
      ['::', 'unspecified ::/128'],
      ['::1', 'loopback ::1/128'],
      ['::7f00:1', 'IPv4-compatible ::/96 (deprecated)'],
      ['::808:808', 'IPv4-compatible ::/96 (deprecated), whatever address it carries'],
      ['::8.8.8.8', 'IPv4-compatible ::/96, as getaddrinfo writes it'],
      ['::127.0.0.1', 'IPv4-compatible ::/96, as getaddrinfo writes it'],
      ['::ffff:0:808:808', 'IPv4-translated ::ffff:0:0:0/96'],
      ['64:ff9b:1::808:808', 'local-use IPv4/IPv6 translation 64:ff9b:1::/48'],
      ['100::1', 'discard-only 100::/64'],
      ['100:0:0:1::1', 'dummy IPv6 prefix 100:0:0:1::/64'],
      ['2001::1', 'Teredo 2001::/32'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo 2001::/32 (an address carrying a public one)'],
      ['2001:1::1', 'IETF protocol assignments 2001::/23 (PCP anycast)'],
      ['2001:1ff::1', 'IETF protocol assignments 2001::/23'],
      ['2001:2::1', 'benchmarking 2001:2::/48'],
      ['2001:3::1', 'AMT 2001:3::/32'],
      ['2001:4:112::1', 'AS112 2001:4:112::/48'],
      ['2001:10::1', 'deprecated ORCHID 2001:10::/28'],
      ['2001:20::1', 'ORCHIDv2 2001:20::/28'],
      ['2001:30::1', 'drone remote ID 2001:30::/28'],
      ['2001:db8::1', 'documentation 2001:db8::/32'],
      ['2620:4f:8000::1', 'AS112 2620:4f:8000::/48'],
      ['3fff::1', 'documentation 3fff::/20'],
      ['3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation 3fff::/20'],
      ['5f00::1', 'segment routing 5f00::/16'],
      ['fc00::1', 'unique local fc00::/7'],
      ['fd00:ec2::254', 'unique local fc00::/7 (the AWS IPv6 metadata address)'],
      ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique local fc00::/7'],
      ['fe80::1', 'link-local fe80::/10'],
      ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local fe80::/10'],
      ['fec0::1', 'deprecated site-local fec0::/10'],
      ['ff02::1', 'multicast ff00::/8'],
    ])('should block %s: %s', (address) => {
      expect(networks.blocks(address)).toBe(true);
    });

    it.each([
      ['8.8.8.8', 'a public address'],
      ['93.184.215.14', 'a public address'],
      ['1.0.0.0', 'right after 0.0.0.0/8'],
      ['9.255.255.255', 'right before 10.0.0.0/8'],
      ['11.0.0.0', 'right after 10.0.0.0/8'],
      ['100.63.255.255', 'right before 100.64.0.0/10'],
      ['100.128.0.0', 'right after 100.64.0.0/10'],
      ['126.255.255.255', 'right before 127.0.0.0/8'],
      ['128.0.0.0', 'right after 127.0.0.0/8'],
      ['168.63.129.15', 'beside the Azure host address'],
      ['168.63.129.17', 'beside the Azure host address'],
      ['172.15.255.255', 'right before 172.16.0.0/12'],
      ['172.32.0.0', 'right after 172.16.0.0/12'],
      ['192.0.1.0', 'between 192.0.0.0/24 and 192.0.2.0/24'],
      ['198.17.255.255', 'right before 198.18.0.0/15'],
      ['198.20.0.0', 'right after 198.18.0.0/15'],
      ['223.255.255.255', 'right before 224.0.0.0/4'],
      ['2606:4700:4700::1111', 'a public IPv6 address'],
      ['2001:4860:4860::8888', 'a public IPv6 address in 2001::/16 past the IETF block'],
      ['2001:200::1', 'right after 2001::/23'],
      ['2a00:1450:4001::1', 'a public IPv6 address'],
      ['::1:0:0:1', 'past ::/96'],
    ])('should let %s through: %s', (address) => {
      expect(networks.blocks(address)).toBe(false);
    });

    it.each([
      ['::ffff:127.0.0.1', true],
      ['::ffff:7f00:1', true],
      ['::ffff:a00:1', true],
      ['::ffff:a9fe:a9fe', true],
      ['::ffff:808:808', false],
      ['::ffff:8.8.8.8', false],
      ['0:0:0:0:0:ffff:8.8.8.8', false],
      ['0:0:0:0:0:ffff:10.0.0.1', true],
      ['64:ff9b::7f00:1', true],
      ['64:ff9b::127.0.0.1', true],
      ['64:ff9b::a9fe:a9fe', true],
      ['64:ff9b::808:808', false],
      ['2002:7f00:1::', true],
      ['2002:7f00:1:5::1', true],
      ['2002:c0a8:101::1', true],
      ['2002:808:808::1', false],
    ])(
      'should judge %s (IPv4-mapped, NAT64 or 6to4) by the IPv4 address it carries: blocked %s',
      (address, blocked) => {
        expect(networks.blocks(address)).toBe(blocked);
      },
    );

    it('should read IPv6 in brackets, with a zone, and in every spelling of its groups', () => {
      expect(networks.blocks('[::1]')).toBe(true);
      expect(networks.blocks('[fe80::1]')).toBe(true);
      expect(networks.blocks('fe80::1%eth0')).toBe(true);
      expect(networks.blocks('[fe80::1%25eth0]')).toBe(true);
      expect(networks.blocks('0:0:0:0:0:0:0:1')).toBe(true);
      expect(networks.blocks('0000:0000:0000:0000:0000:0000:0000:0001')).toBe(true);
      expect(networks.blocks('FD00:EC2::254')).toBe(true);
      expect(networks.blocks('[2606:4700:4700::1111]')).toBe(false);
    });

    it('should not take a name, or anything else that is not an IP address, for one', () => {
      expect(networks.blocks('localhost')).toBe(false);
      expect(networks.blocks('127.1')).toBe(false);
      expect(networks.blocks('')).toBe(false);
    });

    // Each as the URL parser (WHATWG, which `new URL` follows) reads it, the way it reaches the check.
    it.each([
      'http://127.0.0.1/x',
      'http://2130706433/x',
      'http://0x7f000001/x',
      'http://0x7f.1/x',
      'http://0x7F.0.0.1:8080/x',
      'http://0177.0.0.1/x',
      'http://017700000001/x',
      'http://127.1/x',
      'http://127.0.1/x',
      'http://127.0.0.1./x',
      'http://%31%32%37.0.0.1/x',
      'http://0/x',
      'http://10.1/x',
      'http://0xa9.0xfe.0xa9.0xfe/latest/meta-data',
      'http://[::1]/x',
      'http://[0:0:0:0:0:0:0:1]/x',
      'http://[::]/x',
      'http://[::127.0.0.1]/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://[::ffff:7f00:1]/x',
      'http://[::ffff:169.254.169.254]/x',
      'http://[64:ff9b::127.0.0.1]/x',
      'http://[64:ff9b::7f00:1]/x',
      'http://[2002:7f00:1::]/x',
      'http://[2001::1]/x',
      'http://[fd00:ec2::254]/latest/meta-data',
      'https://[FE80::1]:8443/x',
    ])('should refuse to save %s, naming WEBHOOK_ALLOWED_NETWORKS', async (url) => {
      await expect(networks.problemWith(url)).resolves.toBe(
        `url must not point to a private or special-purpose address; ${OPEN}`,
      );
    });

    it.each([
      'http://8.8.8.8/x',
      'http://134744072/x',
      'http://0x8.0x8.0x8.0x8/x',
      'http://[::ffff:8.8.8.8]/x',
      'http://[64:ff9b::808:808]/x',
      'http://[2002:808:808::]/x',
      'https://[2606:4700:4700::1111]/x',
    ])('should save %s (a public address, however it is spelled)', async (url) => {
      await expect(networks.problemWith(url)).resolves.toBeUndefined();
    });
  });

  describe('with WEBHOOK_ALLOWED_NETWORKS', () => {
    const networks = new BlockedNetworks([], ['10.20.0.0/16', 'fd00:20::/48', '127.0.0.0/8', '::1/128']);

    it('should open those ranges inside the blocked ones, and only those', () => {
      expect(networks.blocks('10.20.0.1')).toBe(false);
      expect(networks.blocks('10.20.255.255')).toBe(false);
      expect(networks.blocks('10.21.0.1')).toBe(true);
      expect(networks.blocks('10.19.255.255')).toBe(true);
      expect(networks.blocks('fd00:20::1')).toBe(false);
      expect(networks.blocks('fd00:21::1')).toBe(true);
      expect(networks.blocks('127.0.0.1')).toBe(false);
      expect(networks.blocks('::1')).toBe(false);
      expect(networks.blocks('169.254.169.254')).toBe(true);
      expect(networks.blocks('192.168.1.1')).toBe(true);
    });

    it('should open an IPv4 range for the IPv6 addresses that carry it, too', () => {
      expect(networks.blocks('::ffff:10.20.0.1')).toBe(false);
      expect(networks.blocks('64:ff9b::a14:1')).toBe(false);
      expect(networks.blocks('2002:a14:1::1')).toBe(false);
      expect(networks.blocks('::ffff:10.21.0.1')).toBe(true);
    });

    it('should open an address that carries an IPv4 one only by that IPv4 address, never by its IPv6 range', () => {
      const carriers = new BlockedNetworks([], ['::ffff:0:0/96', '64:ff9b::/96', '2002::/16', '10.0.0.7/32']);
      // The metadata address through each carrier range, listed as allowed: still blocked.
      expect(carriers.blocks('::ffff:a9fe:a9fe')).toBe(true);
      expect(carriers.blocks('64:ff9b::a9fe:a9fe')).toBe(true);
      expect(carriers.blocks('2002:a9fe:a9fe::1')).toBe(true);
      expect(carriers.opens('64:ff9b::a9fe:a9fe')).toBe(false);
      // Its IPv4 address allowed: open in every form.
      expect(carriers.blocks('10.0.0.7')).toBe(false);
      expect(carriers.blocks('::ffff:a00:7')).toBe(false);
      expect(carriers.blocks('64:ff9b::a00:7')).toBe(false);
      expect(carriers.blocks('2002:a00:7::1')).toBe(false);
      expect(carriers.opens('64:ff9b::a00:7')).toBe(true);
      expect(carriers.blocks('64:ff9b::a00:8')).toBe(true);
    });

    it('should save a URL in an opened range', async () => {
      await expect(networks.problemWith('http://127.0.0.1:8080/hook')).resolves.toBeUndefined();
      await expect(networks.problemWith('http://[::1]:8080/hook')).resolves.toBeUndefined();
      await expect(networks.problemWith('http://10.20.1.2/hook')).resolves.toBeUndefined();
      await expect(networks.problemWith('http://10.21.1.2/hook')).resolves.toBe(
        `url must not point to a private or special-purpose address; ${OPEN}`,
      );
    });
  });

  describe('with WEBHOOK_BLOCKED_NETWORKS', () => {
    const networks = new BlockedNetworks(['10.0.0.0/8', '8.8.8.0/24', '2002::/16'], ['10.20.0.0/16']);

    it('should block its ranges besides the special-purpose ones, which stay blocked, less the allowed ones', () => {
      expect(networks.blocks('10.1.2.3')).toBe(true);
      expect(networks.blocks('10.20.2.3')).toBe(false);
      expect(networks.blocks('8.8.8.8')).toBe(true);
      expect(networks.blocks('8.8.4.4')).toBe(false);
      // Listing 10.0.0.0/8 reopens nothing: loopback, the metadata address, IPv6 loopback, Teredo.
      expect(networks.blocks('127.0.0.1')).toBe(true);
      expect(networks.blocks('169.254.169.254')).toBe(true);
      expect(networks.blocks('::1')).toBe(true);
      expect(networks.blocks('2001::1')).toBe(true);
    });

    it('should still judge mapped and NAT64 addresses by their IPv4 address, and block a carrier range it lists', () => {
      expect(networks.blocks('::ffff:10.1.2.3')).toBe(true);
      expect(networks.blocks('64:ff9b::808:808')).toBe(true);
      expect(networks.blocks('::ffff:127.0.0.1')).toBe(true);
      expect(networks.blocks('::ffff:8.8.4.4')).toBe(false);
      expect(networks.blocks('2002:808:404::1')).toBe(true);
    });

    it('should name the list that refuses a URL', async () => {
      await expect(networks.problemWith('http://0x8.8.8.8/x')).resolves.toBe(
        `url must not point to an address in WEBHOOK_BLOCKED_NETWORKS; ${OPEN}`,
      );
      await expect(networks.problemWith('http://0xa.1.2.3/x')).resolves.toBe(
        `url must not point to a private or special-purpose address; ${OPEN}`,
      );
      await expect(networks.problemWith('http://[::1]/x')).resolves.toBe(
        `url must not point to a private or special-purpose address; ${OPEN}`,
      );
    });

    it('should be opened only by WEBHOOK_ALLOWED_NETWORKS, for special-purpose and added ranges alike', () => {
      const opened = new BlockedNetworks(['10.0.0.0/8', '8.8.8.0/24'], ['127.0.0.0/8', '8.8.8.8/32']);
      expect(opened.blocks('127.0.0.1')).toBe(false);
      expect(opened.blocks('8.8.8.8')).toBe(false);
      expect(opened.blocks('8.8.8.9')).toBe(true);
      expect(opened.blocks('169.254.169.254')).toBe(true);
      expect(opened.opens('127.0.0.1')).toBe(true);
      expect(opened.opens('::ffff:127.0.0.1')).toBe(true);
      expect(opened.opens('169.254.169.254')).toBe(false);
      expect(opened.opens('receiver.example')).toBe(false);
    });

    it('should block the special-purpose ranges when it lists nothing', () => {
      expect(new BlockedNetworks([]).blocks('127.0.0.1')).toBe(true);
      expect(new BlockedNetworks([]).blocks('8.8.8.8')).toBe(false);
    });
  });

  describe('when an endpoint with a name is saved', () => {
    it('should refuse a name that resolves to a blocked address, naming WEBHOOK_ALLOWED_NETWORKS', async () => {
      const networks = new BlockedNetworks([], [], (_host, _options, answer: Answer) =>
        answer(null, [
          { address: '2606:4700:4700::1111', family: 6 },
          { address: '169.254.169.254', family: 4 },
        ]),
      );
      await expect(networks.problemWith('http://metadata.internal/x')).resolves.toBe(
        `url must not resolve to a private or special-purpose address (metadata.internal does); ${OPEN}`,
      );
    });

    it('should save a name that resolves into an allowed range only', async () => {
      const networks = new BlockedNetworks([], ['10.20.0.0/16'], (_host, _options, answer: Answer) =>
        answer(null, [{ address: '10.20.3.4', family: 4 }]),
      );
      await expect(networks.problemWith('http://receiver.internal/x')).resolves.toBeUndefined();
    });

    it('should let a name that does not resolve be saved (the send checks it again)', async () => {
      const networks = new BlockedNetworks([], [], (_host, _options, answer: Answer) =>
        answer(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }), []),
      );
      await expect(networks.problemWith('http://not-yet.example/x')).resolves.toBeUndefined();
    });

    it('should not wait on a resolver that never answers past its timeout', async () => {
      const asked: string[] = [];
      const networks = new BlockedNetworks([], [], (host) => void asked.push(host), 50);
      await expect(networks.problemWith('https://hung.example/x')).resolves.toBeUndefined();
      expect(asked).toEqual(['hung.example']);
    });
  });

  describe('when a send connects', () => {
    const lookup = (networks: BlockedNetworks, host: string) =>
      new Promise<{ error: Error | null; address: unknown }>((resolve) =>
        networks.lookup(host, {}, (error, address) => resolve({ error, address })),
      );

    it('should fail the connection to a name that resolves to a blocked address, saying how to open it', async () => {
      const { error } = await lookup(new BlockedNetworks(), 'localhost');
      expect(error).toBeInstanceOf(BlockedAddressError);
      expect(error?.message).toBe(
        'localhost resolves to a blocked address; not connecting (an operator can open its range with WEBHOOK_ALLOWED_NETWORKS)',
      );
    });

    it('should connect when the allow-list opens every address the name resolves to', async () => {
      const { error, address } = await lookup(new BlockedNetworks([], ['127.0.0.0/8', '::1/128']), 'localhost');
      expect(error).toBeNull();
      expect(['127.0.0.1', '::1']).toContain(address);
    });
  });
});
