// A CommonJS dependency of the application that requires the kit.
module.exports = require('@rxfleet/operators');
