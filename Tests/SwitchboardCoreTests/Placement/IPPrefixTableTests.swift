import SwitchboardCore
import XCTest

final class IPPrefixTableTests: XCTestCase {
    private let regions = Fixture.regions

    private func table(_ csv: String, file: StaticString = #filePath, line: UInt = #line) -> IPPrefixTable {
        do { return try IPPrefixTable(csv: csv) } catch {
            XCTFail("\(error)", file: file, line: line)
            return IPPrefixTable()
        }
    }

    // MARK: parsing

    func test_commentsBlankLinesAndSpacesAreIgnored() {
        let csv = """
            # operator prefixes
            10.0.0.0/8 , fra   # office

              \t
            192.0.2.0/24,\t-33.9399, 151.1753
            2001:db8::/32,nrt
            """
        let table = table(csv)
        XCTAssertEqual(table.count, 3)
        XCTAssertEqual(table.lookup("10.1.2.3", regions: regions), Fixture.region("fra"))
        XCTAssertEqual(table.lookup("192.0.2.1", regions: regions), Fixture.point(-33.9399, 151.1753))
        XCTAssertEqual(table.lookup("2001:db8::5", regions: regions), Fixture.region("nrt"))
    }

    func test_anEmptyFileIsAnEmptyTable() {
        XCTAssertEqual(table("").count, 0)
        XCTAssertEqual(table("# nothing\n\n").count, 0)
        XCTAssertNil(table("").lookup("10.0.0.1", regions: regions))
    }

    func test_windowsLineEndingsParseLikeUnixOnes() {
        let table = table("# prefixes\r\n10.0.0.0/8,fra\r\n192.0.2.0/24,1.5,2.5\r\n")
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table.lookup("10.0.0.1", regions: regions), Fixture.region("fra"))
        XCTAssertEqual(table.lookup("192.0.2.1", regions: regions), Fixture.point(1.5, 2.5))
    }

    func test_aBadLineIsRefusedNamingItsLineNumber() {
        let bad: [(String, String)] = [
            ("no prefix length", "10.0.0.0,fra"),
            ("prefix length too long for IPv4", "10.0.0.0/33,fra"),
            ("prefix length too long for IPv6", "2001:db8::/129,fra"),
            ("negative prefix length", "10.0.0.0/-1,fra"),
            ("not a number as prefix length", "10.0.0.0/eight,fra"),
            ("two slashes", "10.0.0.0/8/8,fra"),
            ("not an address", "10.0.0.300/8,fra"),
            ("no location", "10.0.0.0/8"),
            ("empty region", "10.0.0.0/8, "),
            ("latitude out of range", "10.0.0.0/8,91,0"),
            ("longitude out of range", "10.0.0.0/8,0,181"),
            ("latitude not a number", "10.0.0.0/8,north,0"),
            ("too many fields", "10.0.0.0/8,1,2,3"),
            ("garbage", "hello"),
        ]
        for (name, line) in bad {
            let csv = "# header\n10.0.0.0/8,fra\n\(line)\n192.0.2.0/24,nrt\n"
            XCTAssertThrowsError(try IPPrefixTable(csv: csv), name) { error in
                guard let error = error as? SwitchboardError else { return XCTFail("\(name): \(error)") }
                XCTAssertEqual(error.code, .invalidConfiguration, name)
                XCTAssertTrue(error.description.contains("line 3"), "\(name): \(error)")
            }
        }
    }

    func test_theLineNumberCountsCommentsAndBlankLines() {
        XCTAssertThrowsError(try IPPrefixTable(csv: "\n\n# c\n\n10.0.0.0/8,fra\nbad\n")) { error in
            XCTAssertTrue("\(error)".contains("line 6"), "\(error)")
        }
    }

    // MARK: lookup

    func test_theLongestMatchingIPv4PrefixWinsWhateverTheFileOrder() {
        let lines = ["10.0.0.0/8,fra", "10.1.0.0/16,lhr", "10.1.2.0/24,nrt", "10.1.2.128/25,syd", "0.0.0.0/0,sin"]
        let cases: [(String, String)] = [
            ("10.1.2.200", "syd"), ("10.1.2.127", "nrt"), ("10.1.3.1", "lhr"), ("10.2.0.0", "fra"),
            ("10.255.255.255", "fra"), ("11.0.0.0", "sin"), ("9.255.255.255", "sin"),
        ]
        for order in [lines, lines.reversed(), [lines[2], lines[4], lines[0], lines[3], lines[1]]] {
            let table = table(order.joined(separator: "\n"))
            for (address, region) in cases {
                XCTAssertEqual(table.lookup(address, regions: regions), Fixture.region(region), "\(address) with \(order)")
            }
        }
    }

    func test_prefixLengthsThatAreNotWholeOctetsMaskBits() {
        let table = table("172.16.0.0/12,fra\n192.168.0.0/23,nrt\n")
        XCTAssertEqual(table.lookup("172.16.0.0", regions: regions), Fixture.region("fra"))
        XCTAssertEqual(table.lookup("172.31.255.255", regions: regions), Fixture.region("fra"))
        XCTAssertNil(table.lookup("172.32.0.0", regions: regions))
        XCTAssertNil(table.lookup("172.15.255.255", regions: regions))
        XCTAssertEqual(table.lookup("192.168.1.255", regions: regions), Fixture.region("nrt"))
        XCTAssertNil(table.lookup("192.168.2.0", regions: regions))
    }

    func test_hostBitsInThePrefixAreIgnored() {
        XCTAssertEqual(table("10.1.2.3/8,fra").lookup("10.200.0.1", regions: regions), Fixture.region("fra"))
    }

    func test_aSlash32MatchesOneAddress() {
        let table = table("198.51.100.7/32,syd")
        XCTAssertEqual(table.lookup("198.51.100.7", regions: regions), Fixture.region("syd"))
        XCTAssertNil(table.lookup("198.51.100.6", regions: regions))
    }

    func test_theLongestMatchingIPv6PrefixWins() {
        let table = table("2001:db8::/32,fra\n2001:db8:1::/48,nrt\n2001:db8:1:ff00::/56,syd\n::/0,sin\n")
        XCTAssertEqual(table.lookup("2001:db8:1:ff12::1", regions: regions), Fixture.region("syd"))
        XCTAssertEqual(table.lookup("2001:db8:1:fe00::1", regions: regions), Fixture.region("nrt"))
        XCTAssertEqual(table.lookup("2001:db8:2::1", regions: regions), Fixture.region("fra"))
        XCTAssertEqual(table.lookup("2001:db9::1", regions: regions), Fixture.region("sin"))
        XCTAssertEqual(table.lookup("[2001:DB8:1::1]", regions: regions), Fixture.region("nrt"))
    }

    func test_ipv4AndIPv6PrefixesNeverMatchTheOtherFamily() {
        let table = table("0.0.0.0/0,fra\n::/0,nrt\n")
        XCTAssertEqual(table.lookup("203.0.113.1", regions: regions), Fixture.region("fra"))
        XCTAssertEqual(table.lookup("2001:db8::1", regions: regions), Fixture.region("nrt"))
        XCTAssertEqual(table.lookup("::1", regions: regions), Fixture.region("nrt"))
    }

    func test_anIPv4MappedIPv6AddressMatchesIPv4Prefixes() {
        let table = table("10.0.0.0/8,fra\n10.1.0.0/16,lhr\n::/0,nrt\n")
        XCTAssertEqual(table.lookup("::ffff:10.1.2.3", regions: regions), Fixture.region("lhr"))
        XCTAssertEqual(table.lookup("::FFFF:10.9.2.3", regions: regions), Fixture.region("fra"))
        XCTAssertEqual(table.lookup("::ffff:0a01:0203", regions: regions), Fixture.region("lhr"))
        XCTAssertEqual(table.lookup("[::ffff:10.1.2.3]", regions: regions), Fixture.region("lhr"))
    }

    func test_aPrefixWhoseRegionIsUnknownFallsBackToAShorterPrefix() {
        let table = table("10.0.0.0/8,fra\n10.1.0.0/16,atlantis\n")
        XCTAssertEqual(table.lookup("10.1.2.3", regions: regions), Fixture.region("fra"))
        XCTAssertNil(self.table("10.1.0.0/16,atlantis").lookup("10.1.2.3", regions: regions))
    }

    func test_anUnparseableAddressMatchesNothing() {
        let table = table("0.0.0.0/0,fra\n::/0,nrt")
        for address in ["", "localhost", "10.0.0", "10.0.0.1:443", "1::2::3"] {
            XCTAssertNil(table.lookup(address, regions: regions), address)
        }
    }
}

final class IPAddressParserTests: XCTestCase {
    func test_validAddressesParseToTheirBytes() {
        let cases: [(String, [UInt8])] = [
            ("0.0.0.0", [0, 0, 0, 0]),
            ("255.255.255.255", [255, 255, 255, 255]),
            ("192.0.2.1", [192, 0, 2, 1]),
            ("::", Array(repeating: 0, count: 16)),
            ("::1", Array(repeating: 0, count: 15) + [1]),
            ("1::", [0, 1] + Array(repeating: 0, count: 14)),
            ("2001:db8::1", [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]),
            ("2001:DB8::A", [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x0a]),
            ("1:2:3:4:5:6:7:8", [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]),
            ("1:2:3:4:5:6:7::", [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0]),
            ("::2:3:4:5:6:7:8", [0, 0, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Array(repeating: 0xff, count: 16)),
            ("fe80::1%eth0", [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]),
            ("[2001:db8::1]", [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]),
            ("64:ff9b::192.0.2.33", [0, 0x64, 0xff, 0x9b] + Array(repeating: 0, count: 8) + [192, 0, 2, 33]),
            ("1:2:3:4:5:6:1.2.3.4", [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 1, 2, 3, 4]),
            ("::1.2.3.4", Array(repeating: 0, count: 12) + [1, 2, 3, 4]),
        ]
        for (text, bytes) in cases {
            XCTAssertEqual(IPAddressParser.parse(text), bytes, text)
        }
    }

    func test_ipv4MappedIPv6ComesBackAsIPv4() {
        for text in ["::ffff:192.0.2.1", "::FFFF:192.0.2.1", "0:0:0:0:0:ffff:192.0.2.1", "::ffff:c000:201", "[::ffff:192.0.2.1]"] {
            XCTAssertEqual(IPAddressParser.parse(text), [192, 0, 2, 1], text)
        }
        // Not mapped: the ffff is elsewhere.
        XCTAssertEqual(IPAddressParser.parse("::ffff:0:192.0.2.1")?.count, 16)
        XCTAssertEqual(IPAddressParser.parse("ffff::192.0.2.1")?.count, 16)
    }

    func test_malformedAddressesAreRefused() {
        let bad = [
            "", " ", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", "1.2.3.", ".1.2.3", "a.b.c.d", "1.2.3.0x4",
            " 1.2.3.4", "1.2.3.4 ", "+1.2.3.4", "1.2.3.-4", "1234.1.1.1", "١.٢.٣.٤",
            ":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7",
            ":1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:", "12345::", "g::1", "::1.2.3", "::1.2.3.4:5",
            "1:2:3:4:5:6:7:1.2.3.4", "1.2.3.4::", "1.2.3.4::5", "+1::", "-0::", "1:+2::", "[::1", "::1]",
            "::ffff:1.2.3.256",
        ]
        for text in bad {
            XCTAssertNil(IPAddressParser.parse(text), "accepted \(text.debugDescription)")
        }
    }
}
