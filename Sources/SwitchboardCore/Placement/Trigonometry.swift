import Foundation

// The core needs sin/cos/asin for distances; Foundation's are pure functions.
extension Double {
    var sine: Double { sin(self) }
    var cosine: Double { cos(self) }
    var arcsine: Double { asin(self) }
}
