// The runs API double lives in src/dev (the demo serves it too); tests import it from here.
export { RunsApiDouble, type Fault, type RecordedRequest } from '../../src/devstack/runsApi';
