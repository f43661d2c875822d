/** One question, answered by a person: accepted ends the run done, anything else fails it. */
export const DECIDING = `id: deciding
entry: decide
stages:
  decide:
    ask:
      prompt: Accept the change?
      schema:
        type: object
        required: [decision]
        properties: { decision: { enum: [accepted, rejected] } }
        additionalProperties: false
next:
  decide:
    - { when: { path: output.decision, equals: accepted }, to: done }
    - { to: fail }
`;
